"""The emulator's optional dependency (cel-python, the `sim` extra): missing, it stops the
emulator at start with the command to install it; present, nothing of it is built at import."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from baseten_operator.sim.extra import INSTALL_COMMAND

# `sys.modules[name] = None` makes every later `import name` fail as if it were not installed.
WITHOUT_CEL = "import sys\nsys.modules['celpy'] = None\n"


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_standalone_emulator_refuses_to_start_without_the_sim_extra() -> None:
    done = run_python(
        WITHOUT_CEL
        + "import runpy\n"
        + "runpy.run_module('baseten_operator.sim.kube', run_name='__main__')\n"
    )
    assert done.returncode != 0
    assert "MissingExtraError" in done.stderr
    assert INSTALL_COMMAND in done.stderr
    assert "'celpy'" in done.stderr


@pytest.mark.parametrize(
    "module",
    [
        "baseten_operator.sim.kube",
        "baseten_operator.sim.kube.schema",
        "baseten_operator.sim.kube.crds",
        "baseten_operator.sim.kube.store",
    ],
)
def test_every_part_that_validates_custom_resources_needs_the_extra(module: str) -> None:
    done = run_python(
        WITHOUT_CEL
        + "from baseten_operator.sim.extra import MissingExtraError\n"
        + "try:\n"
        + f"    import {module}\n"
        + "except MissingExtraError as exc:\n"
        + "    print(exc)\n"
        + "else:\n"
        + "    print('imported')\n"
    )
    assert done.returncode == 0, done.stderr
    assert INSTALL_COMMAND in done.stdout


def test_the_cel_environment_is_built_once_on_first_use_not_at_import() -> None:
    done = run_python(
        """
        import threading
        import celpy

        built = []
        original = celpy.Environment

        def counting(*args, **kwargs):
            built.append(threading.current_thread().name)
            return original(*args, **kwargs)

        celpy.Environment = counting
        from baseten_operator.sim.kube import KubeApiServer, cel

        print("after import:", len(built))
        rules = [f"self.replicas > {n}" for n in range(8)]
        threads = [threading.Thread(target=cel.compile_rule, args=(r,)) for r in rules]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        print("after compiling:", len(built))
        print("holds:", all(cel.holds(cel.compile_rule(r), {"replicas": 9}) for r in rules))
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["after import: 0", "after compiling: 1", "holds: True"]

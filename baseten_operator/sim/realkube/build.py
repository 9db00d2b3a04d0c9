"""Building kube-apiserver and etcd from the Go modules under `hack/`, once per machine.

`hack/kube-apiserver/go.mod` and `hack/etcd/go.mod` (with their go.sum, which every download
is verified against) pin the releases; the binaries go to a cache outside the checkout,
`$XDG_CACHE_HOME/baseten-operator/kube/<kubernetes release>/`, named with a digest of what
they are built from (`recipe_digest`), and are built only when missing. A cold build compiles
a few thousand packages: minutes on two cores, so it prints how far it has got. Two builders
at once (parallel test workers) take turns on a file lock, and a binary appears in the cache
only once it is complete. `build_go_binary` does the same for any other pinned Go module (the
tests' kstatus helper).
"""

from __future__ import annotations

import collections
import contextlib
import datetime
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

# The checkout's hack/ directory: the Go modules are not package data (a wheel has no Go).
HACK = Path(__file__).resolve().parents[3] / "hack"
APISERVER_MODULE = HACK / "kube-apiserver"
ETCD_MODULE = HACK / "etcd"
APISERVER_PACKAGE = "k8s.io/kubernetes/cmd/kube-apiserver"
ETCD_PACKAGE = "go.etcd.io/etcd/server/v3"
# How Kubernetes' own release build compiles (hack/lib/golang.sh there): static, no test code,
# stripped; kube-apiserver's version is stamped on top (see ensure_built).
BUILD_TAGS = "selinux,notest"
LDFLAGS = "-s -w"
PROGRESS_EVERY = 30.0
# A cold build on two cores takes about 6 minutes: three times a slow machine's, then it hangs.
BUILD_TIMEOUT = 45 * 60.0
GO_LIST_TIMEOUT = 120.0  # one question to the module proxy

Say = Callable[[str], None]


class BuildError(RuntimeError):
    """The binaries could not be built; the message says why and what to do."""


@dataclass(frozen=True)
class Binaries:
    kube_apiserver: Path
    etcd: Path
    kubernetes_version: str


def pinned_version(go_mod: Path, module: str) -> str:
    """The version `go_mod` requires of `module` (the single source of the pin)."""
    match = re.search(rf"^\s*(?:require\s+)?{re.escape(module)}\s+(v\S+)", go_mod.read_text(), re.M)
    if match is None:
        raise BuildError(f"{go_mod} does not require {module}")
    return match.group(1)


def cache_home() -> Path:
    """The project's cache outside any checkout: `$XDG_CACHE_HOME/baseten-operator`."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "baseten-operator"


def cache_root() -> Path:
    return cache_home() / "kube"


def recipe_digest(module: Path) -> str:
    """What a binary is built from: its module's go.mod and go.sum and the build's flags. Part
    of the cached binary's name, so a changed pin or recipe builds anew instead of reusing."""
    digest = hashlib.sha256(f"{BUILD_TAGS}\0{LDFLAGS}\0".encode())
    for name in ("go.mod", "go.sum"):
        digest.update((module / name).read_bytes())
    return digest.hexdigest()[:12]


def planned() -> Binaries:
    """Where the pinned binaries live, built or not."""
    if not APISERVER_MODULE.joinpath("go.mod").is_file():
        raise BuildError(
            f"the Go modules that pin the control plane are not here ({APISERVER_MODULE}): "
            "a real API server needs a checkout of the repository"
        )
    kubernetes = pinned_version(APISERVER_MODULE / "go.mod", "k8s.io/kubernetes")
    etcd = pinned_version(ETCD_MODULE / "go.mod", "go.etcd.io/etcd/server/v3")
    directory = cache_root() / kubernetes
    return Binaries(
        directory / f"kube-apiserver-{recipe_digest(APISERVER_MODULE)}",
        directory / f"etcd-{etcd}-{recipe_digest(ETCD_MODULE)}",
        kubernetes,
    )


def build_go_binary(
    name: str, module: Path, output: Path, *, package: str = ".", say: Say | None = None
) -> Path:
    """`output`, built first from `package` of the pinned Go module at `module` if it is
    missing: under the same lock, flags and progress reports as the control plane's."""
    if output.is_file():
        return output
    if shutil.which("go") is None:
        raise BuildError(f"building {name} needs Go (the `go` command) on PATH")
    output.parent.mkdir(parents=True, exist_ok=True)
    with _locked(output.parent / ".build.lock"):
        _build(name, module, package, output, LDFLAGS, say or _stderr, tags="")
    return output


def ensure_built(say: Say | None = None) -> Binaries:
    """The pinned binaries, built first if the cache lacks them."""
    say = say or _stderr
    binaries = planned()
    if binaries.kube_apiserver.is_file() and binaries.etcd.is_file():
        return binaries
    if shutil.which("go") is None:
        raise BuildError("building a real API server needs Go (the `go` command) on PATH")
    binaries.kube_apiserver.parent.mkdir(parents=True, exist_ok=True)
    with _locked(binaries.kube_apiserver.parent / ".build.lock"):
        major, minor = binaries.kubernetes_version.lstrip("v").split(".")[:2]
        version_pkg = "k8s.io/component-base/version"
        # What Kubernetes' build stamps from git; a module has no history, so the tree state
        # is "archive" (as for a source tarball) and the build date is the release's.
        version_flags = (
            f"-X {version_pkg}.gitVersion={binaries.kubernetes_version} "
            f"-X {version_pkg}.gitMajor={major} -X {version_pkg}.gitMinor={minor} "
            f"-X {version_pkg}.gitTreeState=archive "
            f"-X {version_pkg}.buildDate={_release_date(binaries.kubernetes_version)}"
        )
        _build("etcd", ETCD_MODULE, ETCD_PACKAGE, binaries.etcd, LDFLAGS, say)
        _build(
            f"kube-apiserver {binaries.kubernetes_version}",
            APISERVER_MODULE,
            APISERVER_PACKAGE,
            binaries.kube_apiserver,
            f"{LDFLAGS} {version_flags}",
            say,
        )
    return binaries


def _release_date(version: str) -> str:
    """The pinned release's publication time, as the module proxy records it."""
    try:
        answer = subprocess.run(
            ["go", "list", "-m", "-json", f"k8s.io/kubernetes@{version}"],
            cwd=APISERVER_MODULE,
            capture_output=True,
            text=True,
            check=False,
            timeout=GO_LIST_TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        raise BuildError(f"go list -m k8s.io/kubernetes@{version}: no answer in time") from None
    if answer.returncode != 0:
        raise BuildError(f"go list -m k8s.io/kubernetes@{version} failed:\n{answer.stderr}")
    released = datetime.datetime.fromisoformat(json.loads(answer.stdout)["Time"])
    return released.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _build(
    name: str,
    module: Path,
    package: str,
    output: Path,
    ldflags: str,
    say: Say,
    *,
    tags: str = BUILD_TAGS,
) -> None:
    if output.is_file():  # another builder finished it while we waited for the lock
        return
    say(
        f"building {name} from source into {output.parent} "
        "(once per machine: minutes while Go's caches are cold, seconds after)"
    )
    partial = output.with_name(output.name + ".partial")
    command = [
        "go", "build", "-v", "-trimpath", "-tags", tags,
        "-ldflags", ldflags, "-o", str(partial), package,
    ]  # fmt: skip
    env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-mod=readonly -buildvcs=false"}
    started = time.monotonic()
    process = subprocess.Popen(
        command, cwd=module, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    assert process.stderr is not None
    # `-v` names each package as it is compiled: a reader keeps them (the count is the
    # progress, the tail the diagnosis), while this thread reports on a timer, so a long
    # compile or the final link is not mistaken for a hang.
    compiled: collections.deque[str] = collections.deque()
    reader = threading.Thread(target=compiled.extend, args=(process.stderr,), daemon=True)
    reader.start()
    while True:
        try:
            code = process.wait(PROGRESS_EVERY)
            break
        except subprocess.TimeoutExpired:
            elapsed = time.monotonic() - started
            if elapsed > BUILD_TIMEOUT:
                process.kill()
                process.wait()
                raise BuildError(
                    f"go build of {name} still running after {elapsed:.0f} s: stopped"
                ) from None
            say(f"  still building {name}: {len(compiled)} packages in {elapsed:.0f} s")
    reader.join()
    if code != 0 or not partial.is_file():
        tail = "".join(list(compiled)[-30:])
        raise BuildError(f"go build of {name} failed (exit {code}):\n{tail}")
    partial.rename(output)
    say(f"built {name} in {time.monotonic() - started:.0f} s ({len(compiled)} packages)")


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive flock on `path` for the duration of the block."""
    with path.open("a") as file:
        fcntl.flock(file, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(file, fcntl.LOCK_UN)


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)

"""TrussPusher with a fake child process: outcomes, timeout kill, concurrency bound, stop."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from baseten_operator.runtime import metrics
from baseten_operator.runtime.clock import FakeClock
from baseten_operator.runtime.fence import WriteFence
from baseten_operator.truss.pusher import PushOutcome, PushRequest, TrussPusher

API_KEY = "sk-test-0123456789"

# A stand-in for push_child: the behaviour is picked by the request's model name, and
# `setup_script` carries a path (pid file or gate file) where a test needs one.
FAKE_CHILD = r"""
import json, os, sys, time
req = json.loads(sys.stdin.read())
key = os.environ.get("BASETEN_OPERATOR_PUSH_API_KEY", "")
mode = req["model_name"]
print("some noise truss printed")
if mode == "ok":
    print(json.dumps({"succeeded": True, "model_id": "model-" + req["deployment_name"],
                      "deployment_id": "dep-" + key[::-1]}))
elif mode == "fail":
    print(json.dumps({"succeeded": False, "error": "rejected with key " + key}))
    sys.exit(1)
elif mode == "crash":
    sys.stderr.write("Traceback (most recent call last):\nRuntimeError: blew up, key " + key + "\n")
    sys.exit(3)
elif mode == "hang":
    # Fills its working directory as truss would, then says who it is and where it works
    # (renamed into place, so the test never reads half of it).
    os.makedirs(os.path.join(req["workdir"], "truss"))
    with open(req["setup_script"] + ".part", "w") as f:
        f.write(str(os.getpid()) + " " + req["workdir"])
    os.rename(req["setup_script"] + ".part", req["setup_script"])
    while True:
        time.sleep(1)
elif mode == "env":
    with open(req["setup_script"], "w") as f:
        json.dump(dict(os.environ), f)
    print(json.dumps({"succeeded": True, "model_id": "m", "deployment_id": "d"}))
elif mode == "echo":
    import base64, urllib.parse
    echoed = base64.b64encode(key.encode()).decode() + " " + urllib.parse.quote(key, safe="")
    print(json.dumps({"succeeded": False, "error": "bad request echoing " + echoed}))
    sys.exit(1)
elif mode == "leash":
    # Records each heartbeat; gives up, as push_child does, after leash_slack of silence.
    import select
    while True:
        ready, _, _ = select.select([req["leash_fd"]], [], [], req["leash_slack"])
        if not ready:
            print(json.dumps({"succeeded": False, "error": "no heartbeat"}))
            sys.exit(3)
        with open(req["setup_script"], "a") as f:
            f.write(os.read(req["leash_fd"], 64).decode())
elif mode == "gate":
    while not os.path.exists(req["setup_script"]):
        time.sleep(0.01)
    print(json.dumps({"succeeded": True, "model_id": "m", "deployment_id": "d"}))
"""


def wait_for(
    predicate: Callable[[], bool], timeout: float = 15.0, tick: Callable[[], None] = lambda: None
) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        tick()
        threading.Event().wait(0.01)


def request(
    key: str, mode: str, *, name: str | None = None, path: Path | None = None
) -> PushRequest:
    return PushRequest(
        key=key,
        model_name=mode,
        deployment_name=name or f"depl-{key.replace('/', '-')}",
        truss_config={"resources": {"accelerator": "L4"}, "baseImage": {"image": "img"}},
        setup_script=str(path or ""),
        model_id=None,
    )


def hung_child(started_file: Path) -> tuple[int, Path]:
    """The pid and working directory a "hang" child reported, once it has."""
    wait_for(started_file.exists)
    pid, workdir = started_file.read_text().split(" ", 1)
    return int(pid), Path(workdir)


def is_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def pushes_total(result: str) -> float:
    value = metrics.REGISTRY.get_sample_value("baseten_truss_pushes_total", {"result": result})
    return value or 0.0


class Harness:
    def __init__(self, **kwargs: object) -> None:
        self.clock = FakeClock()
        self.done: queue.Queue[PushOutcome] = queue.Queue()
        self.pusher = TrussPusher(
            API_KEY,
            "http://127.0.0.1:1/",
            clock=self.clock,
            on_done=self.done.put,
            child_argv=[sys.executable, "-c", FAKE_CHILD],
            **kwargs,  # type: ignore[arg-type]
        )

    def next_outcome(self, tick: Callable[[], None] = lambda: None) -> PushOutcome:
        box: list[PushOutcome] = []

        def arrived() -> bool:
            try:
                box.append(self.done.get_nowait())
            except queue.Empty:
                return False
            return True

        wait_for(arrived, tick=tick)
        return box[0]


@pytest.fixture
def harness() -> Iterator[Harness]:
    h = Harness()
    yield h
    h.pusher.stop(10)


def test_success_outcome_is_kept_and_reported(harness: Harness) -> None:
    before = pushes_total("succeeded")
    assert harness.pusher.launch(request("ns/a", "ok", name="depl-vllm-1-abc"))
    outcome = harness.next_outcome()
    assert outcome == PushOutcome(
        key="ns/a",
        deployment_name="depl-vllm-1-abc",
        succeeded=True,
        error=None,
        model_id="model-depl-vllm-1-abc",
        deployment_id="dep-" + API_KEY[::-1],  # the key reached the child through its env
        duration=0.0,
    )
    assert harness.pusher.take_outcome("ns/a") == outcome
    assert harness.pusher.take_outcome("ns/a") is None
    assert pushes_total("succeeded") == before + 1
    assert not harness.pusher.in_flight("depl-vllm-1-abc")


def test_failure_reported_by_the_child_is_redacted(harness: Harness) -> None:
    before = pushes_total("failed")
    assert harness.pusher.launch(request("ns/a", "fail"))
    outcome = harness.next_outcome()
    assert not outcome.succeeded
    assert outcome.error == "rejected with key <redacted>"
    assert pushes_total("failed") == before + 1


def test_a_crashing_child_reports_the_last_line_of_stderr(harness: Harness) -> None:
    assert harness.pusher.launch(request("ns/a", "crash"))
    outcome = harness.next_outcome()
    assert not outcome.succeeded
    assert outcome.error == "RuntimeError: blew up, key <redacted>"


def test_an_unstartable_child_still_gives_an_outcome() -> None:
    done: queue.Queue[PushOutcome] = queue.Queue()
    pusher = TrussPusher(
        API_KEY, "http://x", on_done=done.put, child_argv=["/nonexistent/push-child"]
    )
    assert pusher.launch(request("ns/a", "ok"))
    outcome = done.get(timeout=15)
    assert not outcome.succeeded
    assert "No such file" in (outcome.error or "")
    pusher.stop(5)


def test_timeout_kills_the_child(harness: Harness, tmp_path: Path) -> None:
    before = pushes_total("timeout")
    pid_file = tmp_path / "pid"
    assert harness.pusher.launch(request("ns/a", "hang", path=pid_file))
    pid, workdir = hung_child(pid_file)
    assert (workdir / "truss").is_dir()

    harness.clock.advance(300)
    # advance(0) re-wakes the watchdog in case it had not started waiting yet.
    outcome = harness.next_outcome(tick=lambda: harness.clock.advance(0))
    assert outcome.error == "timed out after 5m0s"
    assert outcome.duration == 300
    assert not is_alive(pid)
    assert not workdir.exists()  # the killed child could not remove it: the pusher did
    assert pushes_total("timeout") == before + 1
    assert harness.pusher.has_capacity()


def test_concurrency_is_bounded(tmp_path: Path) -> None:
    h = Harness(max_concurrent=2)
    gate = tmp_path / "gate"
    try:
        assert h.pusher.launch(request("ns/a", "gate", path=gate))
        assert h.pusher.launch(request("ns/b", "gate", path=gate))
        assert not h.pusher.has_capacity()
        assert not h.pusher.launch(request("ns/c", "gate", path=gate))
        assert h.pusher.in_flight("depl-ns-a") and h.pusher.in_flight("depl-ns-b")
        assert not h.pusher.in_flight("depl-ns-c")

        gate.touch()
        outcomes = {h.next_outcome().key, h.next_outcome().key}
        assert outcomes == {"ns/a", "ns/b"}
        assert h.pusher.has_capacity()
        assert h.pusher.launch(request("ns/c", "gate", path=gate))
        assert h.next_outcome().key == "ns/c"
    finally:
        gate.touch()
        h.pusher.stop(10)


def test_same_key_or_deployment_name_is_not_pushed_twice(harness: Harness, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    assert harness.pusher.launch(request("ns/a", "gate", name="depl-same", path=gate))
    assert not harness.pusher.launch(request("ns/b", "gate", name="depl-same", path=gate))
    assert not harness.pusher.launch(request("ns/a", "gate", name="depl-other", path=gate))
    gate.touch()
    assert harness.next_outcome().key == "ns/a"
    assert harness.done.empty()


def test_stop_kills_children_and_refuses_new_pushes(harness: Harness, tmp_path: Path) -> None:
    pid_files = [tmp_path / "a", tmp_path / "b"]
    for key, pid_file in zip(("ns/a", "ns/b"), pid_files, strict=True):
        assert harness.pusher.launch(request(key, "hang", path=pid_file))
    pids, workdirs = zip(*(hung_child(p) for p in pid_files), strict=True)

    assert harness.pusher.stop(10)  # the supervisors of the killed children all ended
    errors = {harness.next_outcome().error, harness.next_outcome().error}
    assert errors == {"cancelled: the operator is shutting down"}
    assert not any(is_alive(pid) for pid in pids)
    assert not any(workdir.exists() for workdir in workdirs)
    assert not harness.pusher.has_capacity()
    assert not harness.pusher.launch(request("ns/c", "ok"))


def test_a_failing_callback_does_not_lose_the_outcome() -> None:
    called = threading.Event()

    def explode(outcome: PushOutcome) -> None:
        called.set()
        raise RuntimeError("enqueue failed")

    pusher = TrussPusher(
        API_KEY, "http://x", on_done=explode, child_argv=[sys.executable, "-c", FAKE_CHILD]
    )
    assert pusher.launch(request("ns/a", "ok"))
    assert called.wait(15)
    wait_for(lambda: not pusher.in_flight("depl-ns-a"))
    outcome = pusher.take_outcome("ns/a")
    assert outcome is not None and outcome.succeeded
    pusher.stop(5)


# The real child, in a fresh interpreter: the parent must never import truss, and a push
# failure must come back as one short line without the key.
_REAL_CHILD_IN_FRESH_PROCESS = """
import json, sys, threading
from baseten_operator.truss.pusher import PushRequest, TrussPusher
done = threading.Event()
pusher = TrussPusher(sys.argv[1], "http://127.0.0.1:1", on_done=lambda outcome: done.set())
config = {"resources": {"accelerator": "L4"}, "baseImage": {"image": "img:1"},
          "dockerServer": {"startCommand": "x", "readinessEndpoint": "/r",
                           "livenessEndpoint": "/l", "predictEndpoint": "/p", "serverPort": 8000}}
assert pusher.launch(PushRequest("ns/a", "model", "depl-img-1-abc", config, "echo", None))
assert done.wait(90)
outcome = pusher.take_outcome("ns/a")
print(json.dumps({"truss_imported": "truss" in sys.modules, "error": outcome.error,
                  "succeeded": outcome.succeeded}))
"""


def test_real_child_keeps_truss_out_of_the_operator_and_the_key_out_of_errors() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _REAL_CHILD_IN_FRESH_PROCESS, API_KEY],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["truss_imported"] is False
    assert result["succeeded"] is False
    assert "Connection refused" in result["error"]
    assert "\n" not in result["error"] and "Traceback" not in result["error"]
    assert API_KEY not in done.stdout + done.stderr


def test_the_child_gets_an_allow_listed_environment_never_the_operators_key(
    harness: Harness, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BASETEN_API_KEY", "the-operators-own-key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-for-children")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    monkeypatch.setenv("SSL_CERT_FILE", "/etc/ssl/corp.pem")
    dump = tmp_path / "env.json"
    assert harness.pusher.launch(request("ns/env", "env", path=dump))
    assert harness.next_outcome().succeeded
    env = json.loads(dump.read_text())
    assert "BASETEN_API_KEY" not in env and "AWS_SECRET_ACCESS_KEY" not in env
    assert "the-operators-own-key" not in json.dumps(env)
    assert env["BASETEN_OPERATOR_PUSH_API_KEY"] == API_KEY  # the push's own variable
    assert env["HTTPS_PROXY"] == "http://proxy.internal:3128"
    assert env["LC_ALL"] == "C.UTF-8" and env["SSL_CERT_FILE"] == "/etc/ssl/corp.pem"
    assert env["PATH"] == os.environ["PATH"]


def test_an_error_echoing_the_key_encoded_is_redacted(harness: Harness) -> None:
    assert harness.pusher.launch(request("ns/echo", "echo"))
    outcome = harness.next_outcome()
    assert outcome.error == "bad request echoing <redacted> <redacted>"


def test_stop_says_when_a_supervisor_outlived_its_timeout() -> None:
    """The manager stops the pusher with a budget; a stuck callback shows as not stopped."""
    entered, release = threading.Event(), threading.Event()

    def stuck(outcome: PushOutcome) -> None:
        entered.set()
        release.wait(15)

    pusher = TrussPusher(
        API_KEY, "http://x", on_done=stuck, child_argv=[sys.executable, "-c", FAKE_CHILD]
    )
    assert pusher.launch(request("ns/a", "ok"))
    assert entered.wait(15)
    assert pusher.stop(0.05) is False
    release.set()
    assert pusher.stop(10) is True


def test_children_hear_a_heartbeat_only_while_the_replica_provably_leads(tmp_path: Path) -> None:
    refusal: list[str | None] = [None]
    fence = WriteFence(lambda: refusal[0], clock=FakeClock())
    harness = Harness(fence=fence, leash_interval=0.02, leash_slack=0.5)
    beats = tmp_path / "beats"
    try:
        assert harness.pusher.launch(request("ns/a", "leash", path=beats))
        wait_for(lambda: beats.exists() and beats.read_text().count(".") >= 3)
        refusal[0] = "the lease is held by replica-b"  # deposed, or frozen past its deadline
        outcome = harness.next_outcome()
        assert (outcome.succeeded, outcome.error) == (False, "no heartbeat")
    finally:
        harness.pusher.stop(10)

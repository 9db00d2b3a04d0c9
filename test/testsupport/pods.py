"""A Deployment's pod as the kubelet would run it, for the tests' API servers, which have no
kubelet: its container's environment (`container_env`), and the whole pod run by podman
(`start_pod`, the image tier's).

`start_pod` turns the pod spec the API server holds (what `kubectl apply` or Helm installed)
into a `podman run`, field by field: args, env (values, Secret keys, the downward API), the
user, group and fsGroup, a read-only root filesystem, dropped capabilities, no privilege
escalation, the default seccomp profile, emptyDir volumes (as tmpfs), resource limits, and
the ServiceAccount's token and CA at the in-cluster paths with KUBERNETES_SERVICE_HOST/PORT
set. A field it does not know fails the run rather than being dropped: a new setting in the
manifests must be mapped here, or named as one that only places the pod.

The network is the container's own (slirp4netns), as a pod's is: its ports are published on
loopback ports of the host, and it reaches the host's loopback (the API server, the Baseten
simulator) at HOST_LOOPBACK. The API server is named `kubernetes.default.svc` there, mapped to
that address: the tests' serving certificate names loopback and the in-cluster names, not the
address the container sees.
"""

from __future__ import annotations

import base64
import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from testsupport.clusters import Cluster
from testsupport.e2e.harness import Kubectl
from testsupport.image import Podman

HOST_LOOPBACK = "10.0.2.2"  # the host's 127.0.0.1 seen from slirp4netns (allow_host_loopback)
API_SERVER_NAME = "kubernetes.default.svc"
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
# The kubelet's TokenRequest for a projected token: an hour, renewed before it runs out.
TOKEN_DURATION = "1h"

CONTAINER_FIELDS = {
    "name", "image", "imagePullPolicy", "args", "env", "ports", "securityContext",
    "volumeMounts", "resources", "livenessProbe", "readinessProbe",
}  # fmt: skip
POD_FIELDS = {
    "containers", "securityContext", "serviceAccountName", "terminationGracePeriodSeconds",
    "volumes",
}  # fmt: skip
# Where the pod goes and which of its kind may run at once: nothing one machine honours.
PLACEMENT_FIELDS = {
    "topologySpreadConstraints", "affinity", "nodeSelector", "tolerations",
    "priorityClassName", "schedulerName",
}  # fmt: skip
# What the API server fills in when the manifest leaves it out, accepted only with those
# defaults: the container is run once, its termination message where the kubelet reads it, and
# names resolve through podman's resolver (there is no cluster DNS to put first).
SERVER_DEFAULTS = {"dnsPolicy": "ClusterFirst", "restartPolicy": "Always"}
CONTAINER_DEFAULTS = {
    "terminationMessagePath": "/dev/termination-log",
    "terminationMessagePolicy": "File",
}
POD_SECURITY = {"runAsUser", "runAsGroup", "runAsNonRoot", "fsGroup", "seccompProfile"}
CONTAINER_SECURITY = {"allowPrivilegeEscalation", "capabilities", "readOnlyRootFilesystem"}
QUANTITY_SUFFIXES = {
    "": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30,
}  # fmt: skip


def container_env(
    kubectl: Kubectl, namespace: str, pod: dict[str, Any], pod_name: str = ""
) -> dict[str, str]:
    """The first container's environment as the kubelet sets it: values, Secret keys, and the
    downward API's namespace, pod name and ServiceAccount name."""
    fields = {
        "metadata.namespace": namespace,
        "metadata.name": pod_name,
        "spec.serviceAccountName": pod["serviceAccountName"],
    }
    env = {}
    for variable in pod["containers"][0].get("env", []):
        source = variable.get("valueFrom", {})
        if "value" in variable:
            env[variable["name"]] = variable["value"]
        elif "secretKeyRef" in source:
            ref = source["secretKeyRef"]
            secret = kubectl.json("get", "secret", ref["name"], "-n", namespace)
            env[variable["name"]] = base64.b64decode(secret["data"][ref["key"]]).decode()
        elif source.get("fieldRef", {}).get("fieldPath") in fields:
            env[variable["name"]] = fields[source["fieldRef"]["fieldPath"]]
        else:
            raise AssertionError(f"unhandled env source {variable}")
    return env


def quantity(text: str | int | float) -> float:
    """A Kubernetes resource quantity (`1Gi`, `500m`, `2`) as a number."""
    match = re.fullmatch(r"([0-9.]+)([a-zA-Z]*)", str(text))
    if match is None or match.group(2) not in QUANTITY_SUFFIXES:
        raise AssertionError(f"unhandled quantity {text!r}")
    return float(match.group(1)) * QUANTITY_SUFFIXES[match.group(2)]


@dataclass
class Pod:
    """A running pod's one container."""

    name: str  # the container's, and the pod's hostname
    podman: Podman
    spec: dict[str, Any]
    host_ports: dict[str, int]  # container port name -> loopback port on the host

    @property
    def container(self) -> dict[str, Any]:
        result: dict[str, Any] = self.spec["containers"][0]
        return result

    def url(self, port_name: str, path: str = "", scheme: str = "http") -> str:
        return f"{scheme}://127.0.0.1:{self.host_ports[port_name]}{path}"

    def probe_url(self, probe: str) -> str:
        """Where the kubelet would send the container's `readinessProbe` (or another)."""
        get = self.container[probe]["httpGet"]
        return self.url(get["port"], get["path"], get.get("scheme", "HTTP").lower())

    def alive(self) -> bool:
        state = self.podman.run("inspect", "--format", "{{.State.Running}}", self.name)
        return state.stdout.strip() == "true"

    def logs(self) -> str:
        done = self.podman.run("logs", self.name, check=False)
        return f"--- {self.name}'s log:\n{done.stdout}{done.stderr}"

    def stop(self) -> int:
        """What the kubelet does to end a pod: SIGTERM, then SIGKILL once the grace period
        is over. The container's exit code (137: it had to be killed)."""
        grace = self.spec.get("terminationGracePeriodSeconds", 30)
        self.podman.run("stop", "--time", str(grace), self.name, timeout=grace + 30)
        code = self.podman.run("inspect", "--format", "{{.State.ExitCode}}", self.name)
        return int(code.stdout)

    def remove(self) -> None:
        self.podman.run("rm", "--force", self.name, check=False)


def start_pod(
    podman: Podman,
    kube: Cluster,
    namespace: str,
    pod: dict[str, Any],
    *,
    image: str,
    workdir: Path,
    name: str,
) -> Pod:
    """Run `pod` (a pod template's spec) with podman, its container from `image` (what the
    node would pull for the container's reference: here the image built, by ID)."""
    assert kube.plane is not None, "a pod needs the real API server's CA and tokens"
    _known(pod, POD_FIELDS | PLACEMENT_FIELDS, SERVER_DEFAULTS, "pod")
    # `serviceAccount`: the deprecated name of serviceAccountName, which the server copies.
    assert pod.get("serviceAccount", pod["serviceAccountName"]) == pod["serviceAccountName"]
    (container,) = pod["containers"]
    _known(container, CONTAINER_FIELDS, CONTAINER_DEFAULTS, "container")
    pod_name = f"{name}-{uuid.uuid4().hex[:5]}"
    workdir.mkdir(parents=True, exist_ok=True)

    options = [
        "--detach", "--name", pod_name, "--hostname", pod_name,
        "--network", "slirp4netns:allow_host_loopback=true",
        "--add-host", f"{API_SERVER_NAME}:{HOST_LOOPBACK}",
        *_security(pod, container),
        *_volumes(pod, container),
        *_limits(container),
        "--volume", f"{_service_account(kube, namespace, pod, workdir)}:{SERVICE_ACCOUNT_DIR}:ro",
        "--env-file", str(_env_file(kube, namespace, pod, pod_name, workdir)),
    ]  # fmt: skip
    ports = {p["name"]: p["containerPort"] for p in container.get("ports", [])}
    for port in ports.values():
        options += ["--publish", f"127.0.0.1::{port}"]
    podman.run("run", *options, image, *container.get("args", []))
    started = Pod(pod_name, podman, pod, {})
    try:
        for port_name, port in ports.items():
            address = podman.run("port", pod_name, f"{port}/tcp").stdout.strip()
            started.host_ports[port_name] = int(address.rsplit(":", 1)[1])
    except BaseException:
        started.remove()
        raise
    return started


def _known(spec: dict[str, Any], fields: set[str], defaults: dict[str, str], what: str) -> None:
    """Fail on a field the runner does not map, or a defaulted one set to something else."""
    unknown = set(spec) - fields - set(defaults) - {"serviceAccount"}
    assert not unknown, f"the pod runner does not know the {what}'s {sorted(unknown)}"
    changed = {k: spec[k] for k, v in defaults.items() if spec.get(k, v) != v}
    assert not changed, f"the pod runner runs only the {what}'s defaults, not {changed}"


def _security(pod: dict[str, Any], container: dict[str, Any]) -> list[str]:
    context = pod.get("securityContext", {})
    unknown = set(context) - POD_SECURITY
    assert not unknown, f"the pod runner does not know the pod's securityContext {unknown}"
    profile = context.get("seccompProfile", {"type": "RuntimeDefault"})
    assert profile == {"type": "RuntimeDefault"}, f"unhandled seccompProfile {profile}"
    user, group = context.get("runAsUser"), context.get("runAsGroup")
    assert user is not None and group is not None, "the pod runner needs runAsUser/runAsGroup"
    # The kubelet refuses to start a container that would run as root with runAsNonRoot.
    assert not (context.get("runAsNonRoot") and user == 0), "runAsNonRoot with UID 0"
    options = ["--user", f"{user}:{group}"]
    if "fsGroup" in context:
        options += ["--group-add", str(context["fsGroup"])]

    own = container.get("securityContext", {})
    unknown = set(own) - CONTAINER_SECURITY
    assert not unknown, f"the pod runner does not know the container's securityContext {unknown}"
    if own.get("readOnlyRootFilesystem"):
        # No tmpfs of podman's own on /tmp, /run, /var/tmp: only the pod's volumes are writable.
        options += ["--read-only", "--read-only-tmpfs=false"]
    if own.get("allowPrivilegeEscalation") is False:
        options += ["--security-opt", "no-new-privileges"]
    capabilities = own.get("capabilities", {})
    options += [f"--cap-drop={c}" for c in capabilities.get("drop", [])]
    options += [f"--cap-add={c}" for c in capabilities.get("add", [])]
    return options


def _volumes(pod: dict[str, Any], container: dict[str, Any]) -> list[str]:
    """emptyDir volumes as tmpfs, writable by anyone (the kubelet makes them 0777)."""
    volumes = {volume["name"]: volume for volume in pod.get("volumes", [])}
    options = []
    for mount in container.get("volumeMounts", []):
        volume = volumes[mount["name"]]
        assert set(volume) == {"name", "emptyDir"}, f"unhandled volume {volume}"
        size = volume["emptyDir"].get("sizeLimit")
        settings = ["rw", "exec", "mode=0777"]
        if size is not None:
            settings.append(f"size={int(quantity(size))}")
        options += ["--tmpfs", f"{mount['mountPath']}:{','.join(settings)}"]
    return options


def _limits(container: dict[str, Any]) -> list[str]:
    limits = container.get("resources", {}).get("limits", {})
    unknown = set(limits) - {"cpu", "memory"}
    assert not unknown, f"the pod runner does not know the limits {unknown}"
    options = []
    if "cpu" in limits:
        options += ["--cpus", str(quantity(limits["cpu"]))]
    if "memory" in limits:
        options += ["--memory", str(int(quantity(limits["memory"])))]
    return options


def _service_account(kube: Cluster, namespace: str, pod: dict[str, Any], workdir: Path) -> Path:
    """What the kubelet projects for the pod's ServiceAccount: a token from TokenRequest, the
    cluster's CA, the namespace; readable by the container's user."""
    assert kube.plane is not None and kube.plane.keys is not None
    directory = workdir / "serviceaccount"
    directory.mkdir(mode=0o755)
    token = kube.kubectl.run(
        "create", "token", pod["serviceAccountName"], "-n", namespace,
        f"--duration={TOKEN_DURATION}",
    ).stdout.strip()  # fmt: skip
    (directory / "token").write_text(token)
    (directory / "ca.crt").write_bytes(kube.plane.keys.ca_cert.read_bytes())
    (directory / "namespace").write_text(namespace)
    for file in directory.iterdir():
        file.chmod(0o644)
    return directory


def _env_file(
    kube: Cluster, namespace: str, pod: dict[str, Any], pod_name: str, workdir: Path
) -> Path:
    """The container's environment (a file: the API key stays out of any command line), with
    the variables the kubelet adds for the API server."""
    env = container_env(kube.kubectl, namespace, pod, pod_name)
    env["KUBERNETES_SERVICE_HOST"] = API_SERVER_NAME
    env["KUBERNETES_SERVICE_PORT"] = str(urlsplit(kube.plane.url if kube.plane else "").port)
    path = workdir / "env"
    path.touch(mode=0o600)
    path.write_text("".join(f"{key}={value}\n" for key, value in env.items()))
    return path

"""The image run as the Helm chart's Deployment runs it: the chart installed with its default
values by Helm's SDK into a real kube-apiserver, the API key Secret created as its NOTES say,
the Deployment read back and its pod run with podman (`testsupport.pods`). Without
BasetenModels the operator never calls Baseten, so Baseten's URL stays the default."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import helm_python as helm

from testsupport.clusters import start_kube
from testsupport.e2e.harness import http_ok
from testsupport.image import Podman
from testsupport.paths import REPO
from testsupport.pods import start_pod
from testsupport.polling import wait_for

CHART = REPO / "deploy" / "charts" / "baseten-operator"
NAMESPACE = "baseten-operator-system"
RELEASE = "baseten-operator"
READY_TIMEOUT = 60.0


def test_the_charts_deployment_runs_the_image_and_stops_on_sigterm(
    image: dict[str, Any], podman: Podman, tmp_path: Path
) -> None:
    kube = start_kube(tmp_path / "kube", "real")
    config = helm.Config(
        kubeconfig_path=str(kube.kubeconfig), namespace=NAMESPACE, storage_driver="secret"
    )
    chart = helm.Chart.load(CHART)
    pod = None
    try:
        config.install(chart, RELEASE, {}, create_namespace=True)
        kube.kubectl.run(
            "-n", NAMESPACE, "create", "secret", "generic", "baseten-operator-api-key",
            "--from-literal=api-key=image-tier-key",
        )  # fmt: skip
        deployment = kube.kubectl.json(
            "get", "deployment", f"{RELEASE}-controller-manager", "-n", NAMESPACE
        )
        spec = deployment["spec"]["template"]["spec"]
        # The chart's default image is the one `make image` tags.
        assert spec["containers"][0]["image"] == image["image"]
        pod = start_pod(
            podman, kube, NAMESPACE, spec, image=image["id"], workdir=tmp_path / "pod",
            name=f"{RELEASE}-controller-manager",
        )  # fmt: skip
        ready = pod.probe_url("readinessProbe")
        wait_for(
            lambda: http_ok(ready) or not pod.alive(), timeout=READY_TIMEOUT, describe=pod.logs
        )
        assert pod.alive(), pod.logs()
        kubectl, name = kube.kubectl, pod.name
        wait_for(lambda: kubectl.lease_holder().startswith(f"{name}_"), timeout=30)

        assert pod.stop() == 0, pod.logs()
        assert kube.kubectl.lease_holder() == ""
    finally:
        if pod is not None:
            pod.remove()
        chart.close()
        config.close()
        kube.stop()

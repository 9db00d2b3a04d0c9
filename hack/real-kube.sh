#!/usr/bin/env bash
# A real Kubernetes control plane on loopback: kube-apiserver and etcd at the release
# hack/kube-apiserver/go.mod pins, built from source on first use (minutes; then cached under
# ~/.cache/baseten-operator/kube/), RBAC on, an admin kubeconfig written to FILE once ready.
# Stays in the foreground until SIGTERM or SIGINT, then stops both and removes their data.
#
#   hack/real-kube.sh --kubeconfig FILE
set -euo pipefail
cd "$(dirname "$0")/.."
make --no-print-directory -s venv >&2
exec .venv/bin/python -m baseten_operator.sim.realkube run "$@"

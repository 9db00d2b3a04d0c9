#!/usr/bin/env bash
# End-to-end suite on a real cluster: a kind cluster, the operator image built and loaded,
# installed from deploy/install.yaml, the Baseten simulator running as a pod, then the e2e
# suite (test/e2e) pointed at that cluster through KUBECONFIG.
# Needs Docker and kind; without them it says so and exits cleanly.
set -euo pipefail
cd "$(dirname "$0")/.."

CLUSTER=${KIND_CLUSTER:-baseten-operator-e2e}
IMG=${IMG:-baseten-operator:e2e}
BIN=${BIN:-.venv/bin}

missing=()
command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1 || missing+=("a running Docker engine")
command -v kind >/dev/null 2>&1 || missing+=("kind")
if ((${#missing[@]})); then
  echo "test-e2e-kind skipped: needs ${missing[*]} (use 'make test-e2e' for the emulator)."
  exit 0
fi

kind get clusters | grep -qx "$CLUSTER" || kind create cluster --name "$CLUSTER" --wait 120s
export KUBECONFIG
KUBECONFIG=$(mktemp)
kind get kubeconfig --name "$CLUSTER" >"$KUBECONFIG"

make --no-print-directory image ENGINE=docker IMG="$IMG"
kind load docker-image "$IMG" --name "$CLUSTER"

# The Baseten simulator, from the same image, as a pod and a Service.
kubectl create namespace baseten-sim --dry-run=client -o yaml | kubectl apply -f -
kubectl -n baseten-sim apply -f - <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: baseten-sim}
spec:
  selector: {matchLabels: {app: baseten-sim}}
  template:
    metadata: {labels: {app: baseten-sim}}
    spec:
      containers:
        - name: sim
          image: $IMG
          imagePullPolicy: Never
          command: [python, -m, baseten_operator.sim.baseten, --host, 0.0.0.0, --port, "8000",
                    --api-key, e2e-key, --time-scale, "0.05"]
          ports: [{containerPort: 8000}]
---
apiVersion: v1
kind: Service
metadata: {name: baseten-sim}
spec:
  selector: {app: baseten-sim}
  ports: [{port: 80, targetPort: 8000}]
YAML
kubectl -n baseten-sim rollout status deploy/baseten-sim --timeout=120s

sed "s#image: baseten-operator:latest#image: $IMG#" deploy/install.yaml | kubectl apply -f -
kubectl -n baseten-operator-system create secret generic baseten-operator-api-key \
  --from-literal=api-key=e2e-key --dry-run=client -o yaml | kubectl apply -f -
kubectl -n baseten-operator-system set env deploy/baseten-operator-controller-manager \
  BASETEN_API_BASE_URL=http://baseten-sim.baseten-sim.svc/v1
kubectl -n baseten-operator-system rollout status deploy/baseten-operator-controller-manager --timeout=180s

# The operator reaches the simulator through its Service; the tests on this host through a
# port-forward.
kubectl -n baseten-sim port-forward svc/baseten-sim 18000:80 >/dev/null 2>&1 &
forward=$!
trap 'kill $forward 2>/dev/null || true' EXIT
for _ in $(seq 50); do curl -fs http://127.0.0.1:18000/_sim/health >/dev/null && break; sleep 0.2; done

E2E_EXTERNAL_OPERATOR=1 E2E_BASETEN_URL=http://127.0.0.1:18000 \
  "$BIN/pytest" -q test/e2e

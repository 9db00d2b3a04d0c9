#!/usr/bin/env bash
# Re-pin the real API server the tests build (hack/kube-apiserver/go.mod and go.sum) to another
# Kubernetes release:
#
#   hack/pin-kube-apiserver.sh v1.37.2
#
# k8s.io/kubernetes requires its staging modules (k8s.io/api, apimachinery, apiserver, ...) at
# v0.0.0 and maps them to ./staging with replace directives, which a module depending on it
# does not inherit. The list is read from that release's own go.mod, and each is replaced by its
# published release (v1.X.Y -> v0.X.Y); k8s's `go` and `godebug` lines are carried over.
# Then `make real-kube` builds it (the cache directory is per release).
set -euo pipefail
cd "$(dirname "$0")/kube-apiserver"
release=${1:?usage: $0 vMAJOR.MINOR.PATCH (a k8s.io/kubernetes release)}
staging=v0.${release#v1.}

upstream=$(GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$release" |
  sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
{
  echo "module baseten-operator/hack/kube-apiserver"
  echo
  grep -E '^(go|godebug) ' "$upstream"
  echo
  echo "require k8s.io/kubernetes $release"
  echo
  echo "replace ("
  awk -v v="$staging" '$1 ~ /^k8s\.io\// && $2 == "v0.0.0" { print "\t" $1 " => " $1 " " v }' "$upstream"
  echo ")"
} >go.mod
rm -f go.sum
GOFLAGS=-mod=mod go get "k8s.io/kubernetes/cmd/kube-apiserver@$release"
echo "pinned kube-apiserver $release (staging modules $staging); now: make real-kube" >&2

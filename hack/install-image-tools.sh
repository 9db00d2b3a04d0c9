#!/usr/bin/env bash
# The Debian packages that build and run the operator's image without a Docker engine:
# podman (the engine, daemonless), runc (its runtime here: crun refuses a hybrid cgroup
# layout), slirp4netns (a container's network that reaches the host's loopback, where the
# tests' API server and Baseten simulator listen) and mmdebstrap (the stand-in base image,
# made from Debian's packages where python:3.11-slim cannot be pulled).
#
#   hack/install-image-tools.sh          install what is missing (apt-get, as root)
#   hack/install-image-tools.sh --check  only say what is missing; exit 3 if anything is
#
# Exit codes: 0 all present, 1 the install failed, 3 missing and cannot be installed here
# (not root, or no apt-get): the message says what to install. `make image` stops on 3;
# `make test` goes on and the image tier skips, quoting the message.
set -euo pipefail

PACKAGES=(podman runc slirp4netns mmdebstrap)
CANNOT=3

missing=()
for package in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
((${#missing[@]})) || exit 0

if [[ ${1:-} == --check ]]; then
  echo "missing Debian packages: ${missing[*]}" >&2
  exit $CANNOT
fi
if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null; then
  echo "The image needs ${missing[*]}, and they cannot be installed from here (needs root" \
    "and apt-get). Install them (Debian or Ubuntu: sudo apt-get install ${missing[*]}), or" \
    "use a Docker engine: make image ENGINE=docker." >&2
  exit $CANNOT
fi

echo "hack/install-image-tools.sh: installing the Debian packages the image needs:" \
  "${missing[*]} (once per machine)" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "hack/install-image-tools.sh: installed ${missing[*]}" >&2

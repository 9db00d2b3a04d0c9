#!/usr/bin/env bash
# Prometheus for the tests that scrape the Baseten simulator with a real one
# (test/testsupport/prometheus.py): Debian's `prometheus` package, installed once with
# apt-get when `prometheus` is not on PATH. Its service is kept from starting (a
# policy-rc.d for the length of the install): the tests run their own, on loopback.
#
#   hack/install-prometheus.sh      # `make prometheus`; `make test` runs it first
set -euo pipefail

if command -v prometheus >/dev/null 2>&1; then
    exit 0
fi
if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
    echo "Prometheus is required by the tests and is not on PATH: install Debian's" \
        "'prometheus' package (apt-get install prometheus) as root, or put a prometheus" \
        "binary on PATH (or name it in PROMETHEUS_BIN)." >&2
    exit 1
fi

policy=/usr/sbin/policy-rc.d
made_policy=""
if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy"
    chmod +x "$policy"
    made_policy=1
fi
cleanup() { if [[ -n $made_policy ]]; then rm -f "$policy"; fi; }
trap cleanup EXIT

echo "installing Debian's prometheus package (once)" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
prometheus --version 2>&1 | head -1 >&2

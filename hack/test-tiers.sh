#!/usr/bin/env bash
# The whole suite as `make test` runs it: two pytest runs side by side, so that the tiers that
# mostly wait (the operator as a process on a real API server, the soaks, the image) overlap
# with the ones that mostly compute (unit and integration). The two runs share nothing but the
# machine: each starts its own control planes and simulators on free ports, in its own
# numbered temporary directory.
#
#   hack/test-tiers.sh BIN [PYTEST_ARGS...]
#
# PYTEST_ARGS that name a path (test/e2e, a file, a test id) run as one pytest, as given.
set -u
bin=$1
shift
for arg in "$@"; do
    if [[ $arg != -* ]]; then
        exec "$bin/pytest" -q "$@"
    fi
done

log=dist/test-stories.log
mkdir -p dist
echo "tests: test/e2e, test/soak and test/image run alongside (their output: $log, shown at the end)"
"$bin/pytest" -q test/e2e test/soak test/image "$@" >"$log" 2>&1 &
stories=$!
trap 'kill $stories 2>/dev/null' INT TERM
"$bin/pytest" -q test/unit test/integration "$@"
computed=$?
wait $stories
waited=$?
echo
echo "== test/e2e, test/soak, test/image ($log) =="
cat "$log"
if [[ $computed != 0 || $waited != 0 ]]; then
    echo "tests failed: test/unit and test/integration exit $computed; test/e2e, test/soak and test/image exit $waited"
    exit 1
fi

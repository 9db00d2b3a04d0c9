# baseten-operator. `make sandbox` and `make test` do all their own set-up.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
VERSION := $(shell sed -n 's/^version = "\(.*\)"$$/\1/p' pyproject.toml)
IMG ?= baseten-operator:$(VERSION)
KUBECTL ?= kubectl
DIST ?= dist

.PHONY: help venv sandbox tour run test test-unit test-integration test-e2e test-e2e-kind lint real-kube kstatus prometheus \
        manifests helm-package install uninstall deploy undeploy image image-tools wheelhouse test-image \
        image-tier-background bench lock sbom soak soak-short clean

help: ## List the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

# The venv gets the Dockerfile's hash-checked build tools first: a fresh venv's setuptools is
# too old for pyproject's license field, and the wheel test builds without isolation. Then the
# locked runtime closure, hash-checked, so the tests run on exactly what the image ships (the
# dev tools resolve on top of it; left to resolve alone, every new release on PyPI would move
# the tests' environment away from the lock).
# setuptools prints a boxed notice on every editable install of a flat layout ("folders in
# your working directory with the same name as your package ... may take precedence"): here
# that folder is the package itself, so the notice says nothing; an install prints only errors.
EDITABLE_QUIET := PYTHONWARNINGS="ignore:Editable installation"
$(STAMP): pyproject.toml requirements-build.lock requirements.lock
	@command -v $(PYTHON) >/dev/null || { echo "$(PYTHON) is required"; exit 1; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --require-hashes -r requirements-build.lock
	$(BIN)/pip install -q --require-hashes -r requirements.lock
	$(EDITABLE_QUIET) $(BIN)/pip install -q -e '.[dev]'
	$(BIN)/pip check
	$(COMPILE)
	@touch $(STAMP)

# An editable install leaves the package uncompiled, and these machines set
# PYTHONDONTWRITEBYTECODE: every operator start (tests, sandbox, bench) would compile ~150
# modules from source, 0.1 s that an installed wheel (pip compiles it, as in the image) never
# pays. Bytecode gone stale after an edit is ignored, never wrong.
COMPILE := $(BIN)/python -m compileall -q baseten_operator >/dev/null

venv: $(STAMP) ## Create .venv and install the project with its dev tools

sandbox: $(STAMP) ## Run the operator on the embedded Kubernetes emulator (ARGS="--kube real": a real one) and Baseten simulator
	$(BIN)/baseten-operator sandbox $(ARGS)

tour: $(STAMP) ## The narrated, self-ending sandbox demo
	$(BIN)/baseten-operator sandbox --scenario tour $(ARGS)

run: $(STAMP) ## Run the operator against the current kubeconfig (needs BASETEN_API_KEY)
	$(BIN)/baseten-operator run $(ARGS)

lint: $(STAMP) ## ruff, mypy and the import contracts (pyproject.toml, [tool.importlinter])
	$(BIN)/ruff check baseten_operator test hack
	$(BIN)/ruff format --check baseten_operator test hack
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache

# The tests run on a real kube-apiserver and etcd, built from source through the Go module proxy
# into ~/.cache/baseten-operator/kube the first time (minutes on two cores; it says how far it
# got), then reused.
real-kube: $(STAMP) ## Build kube-apiserver and etcd (hack/kube-apiserver, hack/etcd) into the cache, once
	$(BIN)/python -m baseten_operator.sim.realkube build

# The Go helper that reads custom resources' health with Flux's kstatus (test/kstatus).
kstatus: $(STAMP)
	$(TEST_PYTHON) -m testsupport.kstatus

# Debian's prometheus package, for the tests that scrape the Baseten simulator with a real
# Prometheus (test/testsupport/prometheus.py); apt-get, once, when it is not on PATH.
prometheus: ## Install Prometheus for the tests (hack/install-prometheus.sh), once
	hack/install-prometheus.sh

test: image-tier-background lint real-kube kstatus prometheus ## Lint, type-check and run the whole test suite (real API server and emulator, the image)
	hack/test-tiers.sh $(BIN) $(PYTEST_ARGS)

# The image tier (test/image) runs the image built from the Dockerfile. `make test` first
# installs what builds and runs it without Docker (hack/install-image-tools.sh: Debian
# packages, as root; where that cannot be done, the tier skips and says why), then starts the
# build in the background, while lint runs. The tier's tests wait for that build and repeat
# it, every layer then cached, so they always run what the checkout holds.
IMAGE_TOOL := PYTHONPATH=$(CURDIR)/hack $(BIN)/python -m image_tool
IMAGE_LOG := $(DIST)/image/tier-build.log
image-tier-background: $(STAMP)
	@hack/install-image-tools.sh; code=$$?; [ $$code = 0 ] || [ $$code = 3 ]
	@mkdir -p $(dir $(IMAGE_LOG))
	@echo "image tier: building the image in the background (log: $(IMAGE_LOG))"
	@$(IMAGE_TOOL) tier >$(IMAGE_LOG) 2>&1 &

test-unit: $(STAMP) kstatus ## Unit tests only
	$(BIN)/pytest -q test/unit $(PYTEST_ARGS)

test-integration: $(STAMP) real-kube prometheus ## The operator loop on the two simulators
	$(BIN)/pytest -q test/integration $(PYTEST_ARGS)

test-e2e: $(STAMP) real-kube ## The operator as a process, driven with kubectl, on the emulator
	$(BIN)/pytest -q test/e2e $(PYTEST_ARGS)

test-image: $(STAMP) real-kube ## The image tier: the image built (podman) and run as the Deployment runs it
	@hack/install-image-tools.sh; code=$$?; [ $$code = 0 ] || [ $$code = 3 ]
	$(BIN)/pytest -q test/image $(PYTEST_ARGS)

# The bench and the soak import the tests' support package (test/testsupport), which pytest
# finds through pyproject.toml's `pythonpath`.
TEST_PYTHON := PYTHONPATH=$(CURDIR)/test $(BIN)/python

bench: $(STAMP) ## Print scale and latency figures (never asserted)
	$(COMPILE)
	$(TEST_PYTHON) test/bench/run.py $(ARGS)

soak: $(STAMP) real-kube ## Chaos soak: 200 CRs, two replicas, faults, kills, a freeze (minutes; not in `make test`)
	$(TEST_PYTHON) -m testsupport.soak.run $(ARGS)

soak-short: $(STAMP) real-kube ## The bounded soak that `make test` also runs (under a minute)
	$(TEST_PYTHON) -m testsupport.soak.run --short $(ARGS)

manifests: $(STAMP) ## Regenerate the CRD (config/crd, the Helm chart's copies), the sandbox's samples and deploy/install.yaml
	$(BIN)/python hack/generate_manifests.py
	$(KUBECTL) kustomize config/default > deploy/install.yaml

helm-package: $(STAMP) ## Lint and package the Helm chart as $(DIST)/baseten-operator-{version}.tgz
	$(BIN)/python hack/package_chart.py $(DIST)

# Hash-pinned closures: the operator's runtime (what the image installs) and the image's
# build tools. Regenerate after editing pyproject.toml's dependencies (a test checks).
PIP_COMPILE := $(BIN)/pip-compile --quiet --generate-hashes --allow-unsafe \
	--no-emit-index-url --no-emit-find-links

lock: $(STAMP) ## Regenerate requirements.lock and requirements-build.lock (hashes included)
	$(PIP_COMPILE) --strip-extras --output-file requirements.lock pyproject.toml
	$(PIP_COMPILE) --output-file requirements-build.lock hack/requirements-build.in

SBOM ?= sbom.cdx.json
sbom: $(STAMP) ## Write $(SBOM): a CycloneDX SBOM of the locked runtime closure (offline)
	$(IMAGE_TOOL) sbom $(SBOM)

# The image: Docker where its daemon answers, else podman (with runc), or ENGINE=docker|podman.
# Where the pinned base cannot be pulled, podman builds on a stand-in made from Debian's
# packages (hack/image_tool/bases.py), and says so. WHEELHOUSE=dir: air-gapped, every wheel
# from a directory `make wheelhouse WHEELHOUSE=dir` filled. Leaves $(DIST)/image/: the SBOM
# and build.json, the record of what was built.
ENGINE ?=
WHEELHOUSE ?=
image: $(STAMP) ## Build the operator image IMG (WHEELHOUSE=dir: air-gapped; ENGINE=docker|podman)
	$(IMAGE_TOOL) build --tag $(IMG) $(if $(ENGINE),--engine $(ENGINE)) \
		$(if $(WHEELHOUSE),--wheelhouse $(WHEELHOUSE))

wheelhouse: $(STAMP) ## Download every file the locks pin into WHEELHOUSE (default wheelhouse/), hash-checked
	$(IMAGE_TOOL) wheelhouse $(or $(WHEELHOUSE),wheelhouse)

image-tools: ## Install the Debian packages that build and run the image without Docker (as root)
	hack/install-image-tools.sh

test-e2e-kind: $(STAMP) ## e2e on a kind cluster (needs Docker and kind; says so without them)
	hack/kind-e2e.sh

install: ## Install the CRD into the current cluster
	$(KUBECTL) apply -k config/crd

uninstall: ## Remove the CRD (and every BasetenModel) from the current cluster
	$(KUBECTL) delete -k config/crd --ignore-not-found

deploy: ## Install the operator into the current cluster with image IMG
	$(KUBECTL) kustomize config/default | sed 's#image: baseten-operator:latest#image: $(IMG)#' | $(KUBECTL) apply -f -

undeploy: ## Remove the operator from the current cluster
	$(KUBECTL) delete -k config/default --ignore-not-found

clean: ## Remove the virtualenv and caches
	rm -rf $(VENV) .mypy_cache .ruff_cache build dist wheelhouse *.egg-info sbom.cdx.json

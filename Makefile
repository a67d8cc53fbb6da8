# Sundial: the two commands of the README are `make dev` and `make test`.
# Everything else here is a building block of those two.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
SANDBOX_DIR ?= .sundial/sandbox
PYTEST_ARGS ?=

.PHONY: dev test bench venv controlplane node helm promtool kube-state-metrics argocd-lua image lock release lint typecheck imports unit e2e check-crds clean

## Runs Sundial on a local sandbox cluster with example ScheduledJobs firing (Ctrl-C stops it).
dev: venv controlplane
	$(BIN)/sundial dev --dir $(SANDBOX_DIR)

## The whole test suite: quality gates, unit tests and end-to-end tests on a real control plane (the
## e2e suite runs the operator from the image that `make image` builds, or reuses from its cache).
test: venv controlplane node helm promtool kube-state-metrics argocd-lua image lint typecheck imports check-crds
	$(BIN)/pytest $(PYTEST_ARGS)

## The benchmark suite (issue 6): all five scenarios at full size, results in bench/results/<UTC time>/.
## Not part of `make test`; takes about an hour on 2 cores. See docs/benchmarks.md.
BENCH_ARGS ?=
bench: venv controlplane
	$(BIN)/python -m bench run $(BENCH_ARGS)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

## A virtualenv with Sundial and the sandbox tool (both editable) and the pinned development tools;
## reinstalled when either pyproject changes.
venv: $(VENV)/.installed
$(VENV)/.installed: pyproject.toml tools/sandbox/pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e tools/sandbox -e '.[dev]'
	touch $@

## etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok, built once and cached outside the repo.
controlplane:
	bash tools/controlplane/build.sh

## The sandbox's real node (docs/sandbox.md §5): containerd, runc and the CNI plugins from Debian's packages
## (needs root; nothing happens when they are installed), the kubelet and a static pause program built once
## from Go modules and cached outside the repo (like the control plane), the pause and shell images made
## once and cached by their inputs.
## Without root nothing is installed or built, and the real-node tests skip saying why.
node:
	@if [ "$$(id -u)" != 0 ]; then echo "make node: not root, so no real node (tests/e2e/realnode will skip)"; exit 0; fi; \
	bash tools/controlplane/install-node.sh && \
	bin="$$(bash tools/controlplane/build.sh --node)" && \
	bash tools/controlplane/node-images.sh "$$(printf '%s\n' "$$bin" | tail -1)/pause"

## helm, built once from its Go module and cached outside the repo (the chart tests use it).
helm:
	bash tools/helm/build.sh

## promtool, built once from Prometheus' Go module and cached outside the repo (the alert rule tests use it).
promtool:
	bash tools/promtool/build.sh

## kube-state-metrics, built once from its Go module and cached outside the repo (the e2e test of
## config/kube-state-metrics runs it against the sandbox).
kube-state-metrics:
	bash tools/kube-state-metrics/build.sh

## argocd-lua (tools/argocd-lua: Argo CD's Lua setup on gopher-lua), built once and cached outside the repo
## (the Argo CD customization tests run every script in it).
argocd-lua:
	bash tools/argocd-lua/build.sh

## The operator image, built without a Docker engine (mmdebstrap + podman) from the hash-pinned lock and
## cached outside the repo by its inputs; the last line printed is the OCI archive's path. See tools/image/.
image:
	bash tools/image/build.sh

## Regenerate the image's hash-pinned lock files from pyproject.toml (after changing its dependencies).
lock:
	bash tools/image/lock.sh

## dist/: the chart package, the image archive, the sundial wheel (with the kubectl plugin), a CycloneDX
## SBOM and SHA256SUMS, all of pyproject.toml's version. See docs/install.md.
release: helm
	bash tools/image/release.sh

lint:
	$(BIN)/ruff check operator tests bench tools
	$(BIN)/ruff format --check operator tests bench tools

typecheck:
	$(BIN)/mypy

imports:
	$(BIN)/lint-imports

check-crds:
	@if [ -x tools/check-crds.sh ]; then bash tools/check-crds.sh; fi

unit:
	$(BIN)/pytest -m 'not e2e' $(PYTEST_ARGS)

e2e:
	$(BIN)/pytest -m e2e $(PYTEST_ARGS)

clean:
	-$(BIN)/sundial sandbox stop --dir $(SANDBOX_DIR)
	rm -rf $(VENV) .sundial .pytest_cache .mypy_cache .ruff_cache

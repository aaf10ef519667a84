# exagent — run `make help` for the targets.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

LOCALBIN ?= $(CURDIR)/bin
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen
KUSTOMIZE ?= $(LOCALBIN)/kustomize
GOLANGCI_LINT ?= $(LOCALBIN)/golangci-lint
KREW ?= $(LOCALBIN)/krew
VALIDATE_KREW_MANIFEST ?= $(LOCALBIN)/validate-krew-manifest
CRD_REF_DOCS ?= $(LOCALBIN)/crd-ref-docs

# Pinned tool versions (see README "Development").
CONTROLLER_TOOLS_VERSION ?= v0.23.0
KUSTOMIZE_VERSION ?= v5.8.2
GOLANGCI_LINT_VERSION ?= v2.15.0
KREW_VERSION ?= v0.4.3
CRD_REF_DOCS_VERSION ?= v0.3.0

GO_TEST_FLAGS ?= -count=1 -timeout 20m

# The one version string of every binary (internal/version): VERSION=vX.Y.Z
# for a release, otherwise what git describe says about this checkout
# (v0.0.0-<commit> before the first tag).
VERSION ?= $(shell git describe --tags --match 'v*' --dirty 2>/dev/null || echo "v0.0.0-$$(git rev-parse --short HEAD 2>/dev/null || echo unknown)")
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)$(shell git diff --quiet HEAD 2>/dev/null || echo -dirty)
VERSION_PKG := github.com/exagent-io/exagent/internal/version
VERSION_LDFLAGS := -X $(VERSION_PKG).version=$(VERSION) -X $(VERSION_PKG).commit=$(COMMIT)

.DEFAULT_GOAL := help

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: generate
generate: controller-gen ## Generate deepcopy code for the API types.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./api/..."

.PHONY: manifests
manifests: controller-gen ## Generate CRDs, RBAC and webhook manifests into config/, and copy what the chart takes from config/ into charts/exagent.
	$(CONTROLLER_GEN) rbac:roleName=exagent-manager crd webhook paths="./..." \
		output:crd:artifacts:config=config/crd/bases \
		output:rbac:artifacts:config=config/rbac \
		output:webhook:artifacts:config=config/webhook
	hack/chart-files.sh

.PHONY: fmt
fmt: ## Run gofmt on the code.
	gofmt -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

.PHONY: lint
lint: golangci-lint ## Run the linters of .golangci.yml (errcheck, govet, ineffassign, staticcheck, unused).
	$(GOLANGCI_LINT) run ./...

# What make generate and make manifests write, which make verify compares
# with what is committed.
GENERATED := api config charts/exagent/crds charts/exagent/files

.PHONY: license
license: ## Put hack/boilerplate.go.txt's license header on every tracked Go file that lacks it.
	hack/license-headers.sh

.PHONY: verify
verify: generate manifests lint ## Regenerate everything, lint, and fail on any difference from what is committed; check big files, license headers, doc links and that the chart matches config/.
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed on:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	@git diff --exit-code -- $(GENERATED) || { echo "generated files are stale: run 'make generate manifests' and commit"; exit 1; }
	@test -z "$$(git status --porcelain -- $(GENERATED))" || { echo "untracked generated files:"; git status --porcelain -- $(GENERATED); exit 1; }
	go test -count=1 ./test/repo/
	go test -count=1 -run '^(TestChartMatchesKustomize|TestChartFilesAreConfig)$$' ./test/chart/

.PHONY: k8s-binaries
k8s-binaries: ## Build (or reuse) kube-apiserver, etcd and kubectl into the cache; prints the folder.
	@hack/k8s-binaries.sh

.PHONY: test
test: verify vet mcp-everything ## Run unit and envtest integration tests (builds the control-plane binaries once).
	KUBEBUILDER_ASSETS="$$(hack/k8s-binaries.sh)" go test $(GO_TEST_FLAGS) ./...

.PHONY: mcp-everything
mcp-everything: ## Install (once, with npm, into ~/.cache/exagent) the reference MCP server the e2e suite runs on 127.0.0.1.
	@hack/mcp-everything.sh >/dev/null

BENCH_RUNS ?= 50
# FAST narrows the fast-path benchmarks (e.g. FAST=ApprovalBurst); FAST_ARGS passes their -fast.* flags.
FAST ?=
FAST_ARGS ?=
# TRANSCRIPT_ARGS passes the transcript benchmarks' -bench.* flags.
TRANSCRIPT_ARGS ?=
# SEED of the fault suite's random choices; 0 picks one (printed on failure).
SEED ?= 0
CHAOS_TIMEOUT ?= 60m

.PHONY: chaos
chaos: ## Run the fault-injection suite (test/chaos) at full size: kill -9 matrix, 3 managers killed at random, apiserver faults, restart from etcd data, two tenants on one manager (one hostile: redirects, huge answers, hanging MCP, wide delegation; the ordinary one's latency ratio is reported), 1,000 slow-model runs on one manager; SEED=N replays.
	KUBEBUILDER_ASSETS="$$(hack/k8s-binaries.sh)" go test -count=1 -v -timeout $(CHAOS_TIMEOUT) -tags chaos ./test/chaos/ -chaos.full -chaos.seed=$(SEED)
	KUBEBUILDER_ASSETS="$$(hack/k8s-binaries.sh)" go test -count=1 -v -timeout $(CHAOS_TIMEOUT) -run '^TestLoadNeverUncertain$$' ./controllers/ -args -load.runs=1000 -load.model-delay=1s

.PHONY: bench
bench: ## Benchmarks on envtest: pause → approve → finish (BENCH_RUNS=N), then the fast path (approve → intent stages, bursts, throughput, slow models, waiting runs in-process and as the manager process, status write cost by shape; FAST_ARGS='-fast.waiting=N …'), each a ratio to the same apiserver's CAS round trip or ceiling; profiles in bin/bench; then the transcript (write cost at step 1/50/last, segment bytes, memory of finished runs; TRANSCRIPT_ARGS='-bench.turns=N -bench.finished=N …'); then retention (10,000 ended runs with 256 KiB chains and a 1 s TTL, archived and deleted: rate as a ratio of the write ceiling; RETENTION_ARGS='-retention.runs=N -retention.chain-kib=N').
	KUBEBUILDER_ASSETS="$$(hack/k8s-binaries.sh)" go test -count=1 -timeout 60m -run '^$$' -bench '^BenchmarkPauseApproveFinish$$' -benchtime $(BENCH_RUNS)x ./controllers/...
	KUBEBUILDER_ASSETS="$$(hack/k8s-binaries.sh)" go test -count=1 -timeout 60m -run '^$$' -bench '^BenchmarkFast$(FAST)' -benchtime 1x ./controllers/ -args -fast.profiles=$(CURDIR)/bin/bench $(FAST_ARGS)
	KUBEBUILDER_ASSETS="$$(hack/k8s-binaries.sh)" go test -count=1 -timeout 60m -run '^$$' -bench '^Benchmark(TranscriptWriteCost|FinishedRunsMemory)$$' -benchtime 1x ./controllers/ -args $(TRANSCRIPT_ARGS)
	KUBEBUILDER_ASSETS="$$(hack/k8s-binaries.sh)" go test -count=1 -timeout 120m -run '^$$' -bench '^BenchmarkRetention$$' -benchtime 1x ./controllers/ -args $(RETENTION_ARGS)

##@ Build

.PHONY: build
build: ## Build bin/manager and bin/kubectl-approve (VERSION=… to name the version they report).
	go build -ldflags "$(VERSION_LDFLAGS)" -o $(LOCALBIN)/manager ./cmd/manager
	go build -ldflags "$(VERSION_LDFLAGS)" -o $(LOCALBIN)/kubectl-approve ./cmd/kubectl-approve

##@ Release

# The release's platforms; each gets a manager and a plugin archive.
RELEASE_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64
DIST ?= $(CURDIR)/dist

.PHONY: release
release: krew validate-krew-manifest ## make release VERSION=vX.Y.Z: into dist/, offline, the manager and plugin archives for every platform, checksums.txt, the krew manifest (validated with krew), install.yaml and the chart.
	@[[ "$(VERSION)" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$$ ]] || { echo "VERSION=$(VERSION): want vX.Y.Z, e.g. make release VERSION=v0.3.0"; exit 1; }
	rm -rf $(DIST) && mkdir -p $(DIST)/bin
	@for p in $(RELEASE_PLATFORMS); do \
	  os=$${p%/*}; arch=$${p#*/}; ext=; [[ $$os == windows ]] && ext=.exe; \
	  for cmd in manager kubectl-approve; do \
	    echo "building $$cmd for $$os/$$arch"; \
	    CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch go build -trimpath -ldflags "-s -w $(VERSION_LDFLAGS)" \
	      -o $(DIST)/bin/$${os}_$${arch}/$$cmd$$ext ./cmd/$$cmd || exit 1; \
	  done; \
	done
	go run ./hack/release --version $(VERSION) --dist $(DIST) --platforms "$(RELEASE_PLATFORMS)" \
		--krew $(KREW) --validate-krew-manifest $(VALIDATE_KREW_MANIFEST)
	@host=$$(go env GOOS)_$$(go env GOARCH); \
	  for cmd in "manager --version" "kubectl-approve version"; do \
	    out="$$($(DIST)/bin/$$host/$$cmd)"; echo "$$out"; [[ "$$out" == *" $(VERSION) "* ]] || { echo "$$cmd does not report $(VERSION)"; exit 1; }; \
	  done
	@rm -rf $(DIST)/bin
	@cd $(DIST) && ls -l && sha256sum -c --quiet checksums.txt

##@ Tools

.PHONY: controller-gen
controller-gen: $(CONTROLLER_GEN) ## Install controller-gen into ./bin.
$(CONTROLLER_GEN): | $(LOCALBIN)
	GOBIN=$(LOCALBIN) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)

.PHONY: golangci-lint
golangci-lint: $(GOLANGCI_LINT) ## Install golangci-lint into ./bin.
$(GOLANGCI_LINT): | $(LOCALBIN)
	GOBIN=$(LOCALBIN) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

.PHONY: krew
krew: $(KREW) ## Install krew into ./bin (make release installs the plugin with it from its manifest, offline).
$(KREW): | $(LOCALBIN)
	GOBIN=$(LOCALBIN) go install sigs.k8s.io/krew/cmd/krew@$(KREW_VERSION)

.PHONY: validate-krew-manifest
validate-krew-manifest: $(VALIDATE_KREW_MANIFEST) ## Install krew's manifest validator into ./bin.
$(VALIDATE_KREW_MANIFEST): | $(LOCALBIN)
	GOBIN=$(LOCALBIN) go install sigs.k8s.io/krew/cmd/validate-krew-manifest@$(KREW_VERSION)

.PHONY: crd-ref-docs
crd-ref-docs: $(CRD_REF_DOCS) ## Install crd-ref-docs (the API reference generator) into ./bin.
$(CRD_REF_DOCS): | $(LOCALBIN)
	GOBIN=$(LOCALBIN) go install github.com/elastic/crd-ref-docs@$(CRD_REF_DOCS_VERSION)

.PHONY: kustomize
kustomize: $(KUSTOMIZE) ## Install kustomize into ./bin.
$(KUSTOMIZE): | $(LOCALBIN)
	GOBIN=$(LOCALBIN) go install sigs.k8s.io/kustomize/kustomize/v5@$(KUSTOMIZE_VERSION)

$(LOCALBIN):
	mkdir -p $(LOCALBIN)

##@ Local control plane, demo and deployment

KUBECTL ?= kubectl
CONTAINER_TOOL ?= docker
# The image config/default names; deploy and docker-build use IMG, tagged
# with the version (never :latest).
IMG_NAME := ghcr.io/exagent-io/exagent
IMG ?= $(IMG_NAME):$(VERSION)

.PHONY: dev
dev: ## Run the local control plane (hack/devcluster) and bin/manager against it until Ctrl-C.
	hack/dev.sh

.PHONY: demo
demo: ## The first command: build everything, start a local control plane and the manager, and narrate an approval end to end.
	hack/demo.sh

.PHONY: test-e2e
test-e2e: mcp-everything ## Run the end-to-end tests: real kubectl + the plugin against devcluster and a manager process.
	KUBEBUILDER_ASSETS="$$(hack/k8s-binaries.sh)" go test $(GO_TEST_FLAGS) ./test/e2e/...

.PHONY: docker-build
docker-build: ## Build the manager image IMG with a container engine (CONTAINER_TOOL=docker|podman; none on this CI), its version stamped.
	$(CONTAINER_TOOL) build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t $(IMG) .

.PHONY: deploy
deploy: kustomize ## Install into the cluster of the current kubeconfig context (IMG=registry/exagent:tag; needs cert-manager).
	@rm -rf .cache/deploy && mkdir -p .cache/deploy && cd .cache/deploy && \
	$(KUSTOMIZE) create --resources ../../config/default && \
	$(KUSTOMIZE) edit set image $(IMG_NAME)=$(IMG) && \
	$(KUSTOMIZE) build . | $(KUBECTL) apply --server-side -f -

.PHONY: undeploy
undeploy: kustomize ## Remove what deploy installed (CRDs included: this deletes every Agent, AgentRun and ApprovalDecision).
	$(KUSTOMIZE) build config/default | $(KUBECTL) delete --ignore-not-found -f -

# The exagent manager image: a static Go binary on distroless, non-root.
# Build where a container engine exists (CI here has none; make release
# builds the same binary into dist/ without one):
#   make docker-build IMG=ghcr.io/exagent-io/exagent:v0.3.0 VERSION=v0.3.0
#   (multi-arch: docker buildx build --platform linux/amd64,linux/arm64 \
#      --build-arg VERSION=v0.3.0 --build-arg COMMIT=$(git rev-parse HEAD) …)

# --- build ---------------------------------------------------------------
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
ARG TARGETOS=linux
ARG TARGETARCH
WORKDIR /src

# Dependencies first: this layer is reused until go.mod or go.sum change.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download

# The sources (.dockerignore leaves out tests, manifests, docs and tooling).
COPY . .

# The version the manager reports (--version, its first log line,
# exagent_build_info): the context has no .git, so make docker-build passes
# what make release stamps into the archives.
ARG VERSION=v0.0.0-dev
ARG COMMIT=unknown

# CGO off: a static binary that needs no libc in the runtime image; the
# same flags as make release's manager archives.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath \
      -ldflags="-s -w -X github.com/exagent-io/exagent/internal/version.version=${VERSION} -X github.com/exagent-io/exagent/internal/version.commit=${COMMIT}" \
      -o /out/manager ./cmd/manager

# --- runtime -------------------------------------------------------------
# distroless/static: CA certificates and tzdata, no shell, no package manager.
FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=v0.0.0-dev
LABEL org.opencontainers.image.source="https://github.com/exagent-io/exagent" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.description="exagent: durable, approvable LLM agent runs as Kubernetes resources" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /out/manager /manager
COPY LICENSE /LICENSE
# 65532 is distroless's "nonroot"; numeric so runAsNonRoot can verify it.
USER 65532:65532
ENTRYPOINT ["/manager"]

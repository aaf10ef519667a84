# The exagent manager image: a static Go binary on distroless, non-root.
# Build: docker build -t ghcr.io/exagent-io/exagent:dev .
#   (multi-arch: docker buildx build --platform linux/amd64,linux/arm64 …)

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

# CGO off: a static binary that needs no libc in the runtime image.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags="-s -w" -o /out/manager ./cmd/manager

# --- runtime -------------------------------------------------------------
# distroless/static: CA certificates and tzdata, no shell, no package manager.
FROM gcr.io/distroless/static-debian12:nonroot
LABEL org.opencontainers.image.source="https://github.com/exagent-io/exagent" \
      org.opencontainers.image.description="exagent: durable, approvable LLM agent runs as Kubernetes resources" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /out/manager /manager
# 65532 is distroless's "nonroot"; numeric so runAsNonRoot can verify it.
USER 65532:65532
ENTRYPOINT ["/manager"]

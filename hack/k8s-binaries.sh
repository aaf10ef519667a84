#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager, etcd and kubectl from the Go
# module proxy into a cache outside the repository, keyed by version, and
# prints that folder (the value for KUBEBUILDER_ASSETS). kube-controller-manager
# runs the garbage collector (and the namespace controller) beside envtest and
# the local control plane, as on every real cluster. setup-envtest downloads prebuilt binaries from the
# internet, which this project cannot rely on, so we build from source:
#   - kube-apiserver, kube-controller-manager and kubectl: a throwaway module that requires
#     k8s.io/kubernetes with every staging module replaced by its v0.x twin;
#   - etcd: a main calling etcdmain.Main from go.etcd.io/etcd/server/v3, in a
#     module of its own (kubernetes pins a different etcd client line).
# A present, complete cache folder is reused as is; a folder missing only some
# of the Kubernetes binaries (one built before kube-controller-manager was
# added) gets just those. Progress goes to stderr;
# stdout carries only the folder.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-3.6.16}"
STAGING_VERSION="v0.${K8S_VERSION#1.}"
CACHE_ROOT="${EXAGENT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/exagent}"
OUT="${CACHE_ROOT}/k8s/${K8S_VERSION}"

log() { echo "k8s-binaries: $*" >&2; }

K8S_BINARIES=(kube-apiserver kube-controller-manager kubectl)
missing_k8s=()
for b in "${K8S_BINARIES[@]}"; do [[ -f "$OUT/$b" ]] || missing_k8s+=("$b"); done
have_etcd=false
[[ -f "$OUT/etcd" && -x "$OUT/etcd" ]] && have_etcd=true
if [[ ${#missing_k8s[@]} -eq 0 && $have_etcd == true ]]; then
  echo "$OUT"
  exit 0
fi

mkdir -p "$OUT"
WORK="$(mktemp -d "${CACHE_ROOT}/build.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
export GOFLAGS="-mod=mod"
export CGO_ENABLED=0

build_kubernetes() {
  local dir="$WORK/kubernetes-module"
  mkdir -p "$dir"
  cd "$dir"
  go mod init exagent.local/k8sbinaries >/dev/null 2>&1
  local gomod
  gomod="$(go mod download -json "k8s.io/kubernetes@v${K8S_VERSION}" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')"
  # Every staging module k8s.io/X => ./staging/src/k8s.io/X becomes k8s.io/X v0.Y.Z.
  local mods
  mods="$(sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\1#p' "$gomod")"
  local args=()
  for m in $mods; do args+=("-replace=${m}=${m}@${STAGING_VERSION}"); done
  go mod edit "${args[@]}"
  go mod edit -require="k8s.io/kubernetes@v${K8S_VERSION}"
  local ldflags="-s -w -X k8s.io/component-base/version.gitVersion=v${K8S_VERSION} \
    -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${K8S_VERSION#1.} \
    -X k8s.io/component-base/version.gitTreeState=clean \
    -X k8s.io/client-go/pkg/version.gitVersion=v${K8S_VERSION} \
    -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=${K8S_VERSION#1.}"
  ldflags="${ldflags//  / }"
  log "resolving k8s.io/kubernetes v${K8S_VERSION}"
  local b pkgs=()
  for b in "${missing_k8s[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/${b}@v${K8S_VERSION}"); done
  go get "${pkgs[@]}" >&2
  for b in "${missing_k8s[@]}"; do
    log "building $b (a few minutes on 2 cores)"
    go build -trimpath -ldflags "$ldflags" -o "$WORK/$b" "k8s.io/kubernetes/cmd/$b" >&2
  done
}

build_etcd() {
  local dir="$WORK/etcd-module"
  mkdir -p "$dir"
  cd "$dir"
  go mod init exagent.local/etcdbinary >/dev/null 2>&1
  cat > main.go <<'GO'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  log "resolving go.etcd.io/etcd/server/v3 v${ETCD_VERSION}"
  go get "go.etcd.io/etcd/server/v3@v${ETCD_VERSION}" >&2
  go mod tidy >&2
  log "building etcd"
  go build -trimpath -ldflags "-s -w" -o "$WORK/etcd" . >&2
}

built=()
if [[ $have_etcd != true ]]; then (build_etcd); built+=(etcd); fi
if [[ ${#missing_k8s[@]} -gt 0 ]]; then (build_kubernetes); built+=("${missing_k8s[@]}"); fi
for b in "${built[@]}"; do rm -rf "${OUT:?}/$b"; mv "$WORK/$b" "$OUT/$b"; done
log "binaries ready in $OUT"
echo "$OUT"

#!/usr/bin/env bash
# Builds golangci-lint with the Kubernetes API linter (kube-api-linter)
# compiled in, into $1 (a path to the binary). This is what
# `golangci-lint custom` does, without its git clone (there is no github
# here, only the Go module proxy): the golangci-lint module's source from
# the module cache, one file that registers the plugin, one go build.
# Both versions are pinned by the Makefile.
set -euo pipefail

out=${1:?usage: hack/golangci-lint.sh OUT}
lint_version=${GOLANGCI_LINT_VERSION:?}
kal_version=${KUBE_API_LINTER_VERSION:?}

work=$(mktemp -d)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT

src=$(go mod download -json "github.com/golangci/golangci-lint/v2@${lint_version}" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$src" ] || { echo "golangci-lint ${lint_version}: not in the module cache" >&2; exit 1; }
cp -r "$src"/. "$work"/
chmod -R u+w "$work"
cat >"$work/cmd/golangci-lint/plugins.go" <<'GO'
package main

// The Kubernetes API linter, registered as golangci-lint's module plugin
// "kubeapilinter" (.golangci.yml enables it for api/ only).
import _ "sigs.k8s.io/kube-api-linter"
GO
cd "$work"
GOFLAGS=-mod=mod go get "sigs.k8s.io/kube-api-linter@${kal_version}" >/dev/null
GOFLAGS=-mod=mod go build -trimpath \
	-ldflags "-s -w -X main.version=${lint_version#v}+kube-api-linter -X main.commit=${kal_version}" \
	-o "$out" ./cmd/golangci-lint
echo "built $out: golangci-lint ${lint_version} with kube-api-linter ${kal_version}"

#!/usr/bin/env bash
# Installs Debian's headless-capable chromium (apt-get; needs root, as on the
# CI and dev machines) once, and prints the browser's path. The browser tests
# of kubectl approve ui (cmd/kubectl-approve/app/ui/browser) find it there,
# or in EXAGENT_CHROMIUM; `make test` runs this first, so no test is skipped
# on a fresh machine.
set -euo pipefail
find_chromium() {
	local c
	for c in "${EXAGENT_CHROMIUM:-}" chromium chromium-browser; do
		[[ -n "$c" ]] && command -v "$c" 2>/dev/null && return 0
	done
	return 1
}
if ! find_chromium >/dev/null; then
	if [[ $(id -u) -ne 0 ]]; then
		echo "chromium is not installed and installing it needs root: sudo apt-get install chromium (or set EXAGENT_CHROMIUM)" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >&2
	apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >&2
fi
find_chromium

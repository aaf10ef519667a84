#!/usr/bin/env bash
# make dev: the local control plane plus the manager, until Ctrl-C.
# Users alice (exagent approver in the samples) and bob get kubeconfigs.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/devenv.sh"

DIR="${DEV_DIR:-$REPO_ROOT/.cache/dev}"
trap stop_all EXIT
trap 'exit 130' INT TERM

build_all
start_devcluster "$DIR" alice bob
start_manager "$DIR"

cat <<MSG
exagent is running against a local control plane.

  export KUBECONFIG=$DIR/kubeconfig PATH=$BIN:$K8S_BIN:\$PATH
  kubectl apply -k config/samples
  kubectl approve list -A
  KUBECONFIG=$DIR/alice.kubeconfig kubectl approve scale-web -n demo
  # or as the admin, who may decide too: the manager runs as its own
  # user ($DIR/manager.kubeconfig, ServiceAccount exagent-system/exagent-manager)

Logs: $DIR/devcluster.log, $DIR/logs/. Ctrl-C stops everything.
MSG

# Wait for Ctrl-C, or for either process to die (then stop the other).
# Ctrl-C reaches the whole process group: both children stop cleanly on
# their own (exit 0), and stop_all only waits for them.
interrupted=""
trap 'interrupted=1' INT TERM
rc=0
wait -n "$DEVCLUSTER_PID" "$MANAGER_PID" || rc=$?
if [[ -n "$interrupted" || "$rc" == 0 ]]; then
  echo "stopping" >&2
  exit 0
fi
echo "a process exited ($rc); stopping (see $DIR/logs/manager.log and $DIR/devcluster.log)" >&2
exit 1

# shellcheck shell=bash
# Shared by hack/dev.sh and hack/demo.sh: build the binaries, start the local
# control plane (hack/devcluster) and the manager as separate processes, and
# stop exactly those processes on exit. Source it; it defines functions only.

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BIN="${REPO_ROOT}/bin"
WEBHOOK_PORT="${WEBHOOK_PORT:-9443}"
DEVCLUSTER_PID=""
MANAGER_PID=""

# build_all builds the manager, the plugin and devcluster into bin/, and the
# control plane's binaries into the cache (reused after the first time).
build_all() {
  mkdir -p "$BIN"
  # make build stamps the version (git describe) the manager logs first.
  (cd "$REPO_ROOT" && make -s build LOCALBIN="$BIN" \
    && go build -o "$BIN/devcluster" ./hack/devcluster)
  K8S_BIN="$("$REPO_ROOT/hack/k8s-binaries.sh")"
  KUBECTL="$K8S_BIN/kubectl"
  export PATH="$BIN:$K8S_BIN:$PATH"
}

# start_devcluster DIR USER... starts devcluster and waits for its ready line.
start_devcluster() {
  local dir="$1"; shift
  local args=(--dir "$dir" --webhook-port "$WEBHOOK_PORT")
  for u in "$@"; do args+=(--user "$u"); done
  mkdir -p "$dir"
  rm -f "$dir/devcluster.out"
  "$BIN/devcluster" "${args[@]}" >"$dir/devcluster.out" 2>"$dir/devcluster.log" &
  DEVCLUSTER_PID=$!
  local deadline=$((SECONDS + 180))
  until grep -q '^ready: ' "$dir/devcluster.out" 2>/dev/null; do
    if ! kill -0 "$DEVCLUSTER_PID" 2>/dev/null; then
      echo "devcluster exited before it was ready:" >&2
      tail -n 20 "$dir/devcluster.log" >&2
      DEVCLUSTER_PID=""
      return 1
    fi
    if ((SECONDS > deadline)); then
      echo "devcluster was not ready within 180s (see $dir/devcluster.log)" >&2
      return 1
    fi
    sleep 0.2
  done
  export KUBECONFIG="$dir/kubeconfig"
}

# start_manager DIR starts bin/manager with its own identity (DIR's
# manager.kubeconfig: its ServiceAccount, bound to config/rbac's roles as on
# a cluster; the admin kubeconfig is a person who may decide) and waits
# until its webhook port accepts connections.
start_manager() {
  local dir="$1"
  mkdir -p "$dir/logs"
  # Something else answering on the port would look like our manager.
  if (exec 3<>"/dev/tcp/127.0.0.1/$WEBHOOK_PORT") 2>/dev/null; then
    echo "127.0.0.1:$WEBHOOK_PORT is already in use (another manager?); pick a free port with WEBHOOK_PORT=…" >&2
    return 1
  fi
  "$BIN/manager" --kubeconfig "$dir/manager.kubeconfig" \
    --webhook-cert-dir "$dir/webhook" --webhook-port "$WEBHOOK_PORT" \
    --webhook-client-ca "$dir/webhook/client-ca.crt" \
    --metrics-bind-address 0 --health-probe-bind-address 0 \
    --decision-signing-secret exagent-system/exagent-decision-seal \
    --egress-allow-cidrs 127.0.0.1/32 \
    >>"$dir/logs/manager.log" 2>&1 &
  MANAGER_PID=$!
  local deadline=$((SECONDS + 60))
  until (exec 3<>"/dev/tcp/127.0.0.1/$WEBHOOK_PORT") 2>/dev/null; do
    if ! kill -0 "$MANAGER_PID" 2>/dev/null; then
      echo "the manager exited:" >&2
      tail -n 20 "$dir/logs/manager.log" >&2
      MANAGER_PID=""
      return 1
    fi
    if ((SECONDS > deadline)); then
      echo "the manager's webhook did not listen on 127.0.0.1:$WEBHOOK_PORT within 60s (see $dir/logs/manager.log)" >&2
      return 1
    fi
    sleep 0.2
  done
}

# stop_all stops the manager, then devcluster (SIGINT: a clean stop of
# kube-apiserver and etcd), and waits for both. Only our own PIDs.
stop_all() {
  if [[ -n "$MANAGER_PID" ]]; then
    kill -TERM "$MANAGER_PID" 2>/dev/null || true
    wait "$MANAGER_PID" 2>/dev/null || true
    MANAGER_PID=""
  fi
  if [[ -n "$DEVCLUSTER_PID" ]]; then
    kill -INT "$DEVCLUSTER_PID" 2>/dev/null || true
    wait "$DEVCLUSTER_PID" 2>/dev/null || true
    DEVCLUSTER_PID=""
  fi
}

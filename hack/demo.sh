#!/usr/bin/env bash
# make demo: from a fresh clone, the whole story on a laptop with no cluster
# and no internet — an agent pauses before scaling a Deployment, a user who
# may not approve is refused, an approver approves, the Deployment is really
# scaled, the run succeeds. Exits 0 only if every step did what it says, and
# stops every process it started.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/devenv.sh"

DIR="${DEMO_DIR:-$REPO_ROOT/.cache/demo}"
NS=demo
RUN=scale-web
START=$SECONDS

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
say() { printf '    %s\n' "$*"; }
show() { printf '\033[2m$ %s\033[0m\n' "$*"; "$@"; }
fail() { printf '\n\033[31mdemo failed: %s\033[0m\n' "$*" >&2; exit 1; }

on_exit() {
  local rc=$?
  stop_all
  if ((rc != 0)); then
    echo "logs: $DIR/devcluster.log $DIR/logs/" >&2
  fi
  exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT TERM

step "Building the manager, the kubectl plugin, and the local control plane"
say "(kube-apiserver, etcd and kubectl are built from the Go module proxy once, then cached)"
build_all

step "Starting a local control plane: kube-apiserver + etcd on 127.0.0.1"
say "users: alice (approver), bob (approves only the 'payments' agent)"
rm -rf "$DIR"
start_devcluster "$DIR" alice bob
say "$(grep '^ready: ' "$DIR/devcluster.out")"

step "Starting the exagent manager as its own process (webhooks on 127.0.0.1:$WEBHOOK_PORT)"
start_manager "$DIR"
say "pid $MANAGER_PID, log $DIR/logs/manager.log"

step "Applying config/samples: an ops Agent that must ask before scaling, a Deployment, an AgentRun"
show kubectl apply -k "$REPO_ROOT/config/samples"

step "The run starts, asks to scale web to 3 replicas, and pauses for a human"
show kubectl approve wait "$RUN" -n "$NS" --for=paused --timeout=60s
show kubectl get agentruns -n "$NS"
phase="$(kubectl get agentrun "$RUN" -n "$NS" -o jsonpath='{.status.phase}')"
[[ "$phase" == AwaitingApproval ]] || fail "run is $phase, not AwaitingApproval"
replicas="$(kubectl get deployment web -n "$NS" -o jsonpath='{.spec.replicas}')"
say "the Deployment still has $replicas replica(s): nothing has run"

step "kubectl approve list: what is waiting, and for whom"
show kubectl approve list -n "$NS"

step "kubectl approve show: the exact call a decision would bind"
show kubectl approve show "$RUN" -n "$NS"

step "bob tries to approve — he may approve runs of agent 'payments' only"
if out="$(KUBECONFIG="$DIR/bob.kubeconfig" kubectl approve "$RUN" -n "$NS" --reason "looks fine" 2>&1)"; then
  echo "$out"
  fail "bob's approval was accepted"
fi
printf '\033[2m$ KUBECONFIG=bob.kubeconfig kubectl approve %s -n %s --reason "looks fine"\033[0m\n%s\n' "$RUN" "$NS" "$out"
[[ "$out" == error:* ]] || fail "bob's refusal is not a kubectl-style error"
say "refused at admission: the run is still waiting"

step "alice approves — she holds exagent-approver in the namespace"
printf '\033[2m$ KUBECONFIG=alice.kubeconfig kubectl approve %s -n %s --reason "traffic tonight"\033[0m\n' "$RUN" "$NS"
KUBECONFIG="$DIR/alice.kubeconfig" kubectl approve "$RUN" -n "$NS" --reason "traffic tonight"

step "The run resumes, scales the Deployment as its ServiceAccount, and finishes"
show kubectl approve wait "$RUN" -n "$NS" --for=done --timeout=60s
show kubectl get agentruns -n "$NS"
phase="$(kubectl get agentrun "$RUN" -n "$NS" -o jsonpath='{.status.phase}')"
[[ "$phase" == Succeeded ]] || fail "run ended $phase, not Succeeded"
show kubectl get deployment web -n "$NS" -o custom-columns=NAME:.metadata.name,REPLICAS:.spec.replicas
replicas="$(kubectl get deployment web -n "$NS" -o jsonpath='{.spec.replicas}')"
[[ "$replicas" == 3 ]] || fail "the Deployment has $replicas replicas, not 3"

step "The transcript and the tool journal, as stored in the run's status"
show kubectl get agentrun "$RUN" -n "$NS" -o jsonpath='{range .status.history[*]}{.role}{":\t"}{.content}{range .toolCalls[*]}{"→ "}{.name}{" "}{.arguments}{end}{"\n"}{end}'
show kubectl get agentrun "$RUN" -n "$NS" -o jsonpath='{range .status.calls[*]}{"call "}{.id}{"\t"}{.tool}{"\t"}{.state}{"\t"}{.outcome.result}{"\n"}{end}'
show kubectl get approvaldecisions -n "$NS"

step "Done in $((SECONDS - START))s — stopping the manager and the control plane"

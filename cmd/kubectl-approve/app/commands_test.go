/*
Copyright 2026 The exagent Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package app

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

func TestHelpSaysKubectlApprove(t *testing.T) {
	tests := map[string]struct {
		args      []string
		wantUsage string
	}{
		"root":         {args: []string{"--help"}, wantUsage: "kubectl approve RUN [APPROVAL] [flags]"},
		"no args":      {args: nil, wantUsage: "kubectl approve RUN [APPROVAL] [flags]"},
		"list":         {args: []string{"list", "--help"}, wantUsage: "kubectl approve list [-A] [flags]"},
		"budgets":      {args: []string{"budgets", "--help"}, wantUsage: "kubectl approve budgets [-A] [flags]"},
		"show":         {args: []string{"show", "--help"}, wantUsage: "kubectl approve show RUN [APPROVAL] [flags]"},
		"deny":         {args: []string{"deny", "--help"}, wantUsage: "kubectl approve deny RUN [APPROVAL] [flags]"},
		"cancel":       {args: []string{"cancel", "--help"}, wantUsage: "kubectl approve cancel RUN [APPROVAL] [flags]"},
		"resolve":      {args: []string{"resolve", "--help"}, wantUsage: "kubectl approve resolve RUN --call ID --outcome Succeeded|Failed|Retry [--evidence TEXT] [flags]"},
		"wait":         {args: []string{"wait", "--help"}, wantUsage: "kubectl approve wait RUN --for=paused|done [flags]"},
		"say":          {args: []string{"say", "--help"}, wantUsage: "kubectl approve say CONVERSATION TEXT [--as-participant NAME] [--wait] [flags]"},
		"schedule run": {args: []string{"schedule", "run", "--help"}, wantUsage: "kubectl approve schedule run SCHEDULE [flags]"},
		"version":      {args: []string{"version", "--help"}, wantUsage: "kubectl approve version [-o json|yaml] [flags]"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			cmd := NewCommand(genericiooptions.IOStreams{Out: &out, ErrOut: &out})
			cmd.SetOut(&out)
			cmd.SetArgs(tc.args)
			if err := cmd.Execute(); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), "\n  "+tc.wantUsage+"\n") {
				t.Errorf("usage line %q not in help:\n%s", tc.wantUsage, out.String())
			}
		})
	}
}

func TestKubectlFlagsAreEverywhere(t *testing.T) {
	cmd := NewCommand(genericiooptions.NewTestIOStreamsDiscard())
	for _, sub := range append(cmd.Commands(), cmd) {
		if sub.Name() == "help" || sub.Name() == "completion" {
			continue
		}
		for _, flag := range []string{"kubeconfig", "context", "namespace", "as", "as-group"} {
			if sub.Flag(flag) == nil {
				t.Errorf("%s: missing --%s", sub.Name(), flag)
			}
		}
	}
	deciding := map[string][]string{
		"approve": {"reason", "all", "wait", "timeout", "dry-run", "output"},
		"deny":    {"reason", "all", "wait", "timeout", "dry-run", "output"},
		"cancel":  {"reason", "wait", "timeout", "dry-run", "output"},
		"resolve": {"reason", "call", "outcome", "evidence", "wait", "timeout", "dry-run", "output"},
		"list":    {"all-namespaces", "output", "agent", "watch", "conversations"},
		"budgets": {"all-namespaces"},
		"logs":    {"follow", "timeout"},
		"say":     {"as-participant", "wait", "timeout"},
		"wait":    {"for", "timeout"},
		"show":    {"transcript"},
		"ui":      {"port", "open", "address", "tls-cert", "tls-key", "serve", "auth", "all-namespaces"},
	}
	for name, flags := range deciding {
		sub := cmd
		if name != "approve" {
			sub, _, _ = cmd.Find([]string{name})
		}
		for _, flag := range flags {
			if sub.Flags().Lookup(flag) == nil {
				t.Errorf("%s: missing --%s", name, flag)
			}
		}
	}
	if f := cmd.Commands(); len(f) == 0 {
		t.Fatal("no subcommands")
	}
	list, _, _ := cmd.Find([]string{"list"})
	if list.Flags().ShorthandLookup("A") == nil {
		t.Error("list: missing -A")
	}
}

func TestDecideValidate(t *testing.T) {
	tests := map[string]struct {
		kind    exagentv1.DecisionKind
		mutate  func(*decideOptions)
		wantErr string
	}{
		"approve ok": {kind: exagentv1.DecisionApprove, mutate: func(o *decideOptions) {}},
		"all with approval": {kind: exagentv1.DecisionApprove, mutate: func(o *decideOptions) {
			o.Request.All, o.Request.ApprovalID = true, "a"
		}, wantErr: "--all and an APPROVAL argument cannot be used together"},
		"resolve needs outcome": {kind: exagentv1.DecisionResolve, mutate: func(o *decideOptions) {},
			wantErr: "--outcome is required: Succeeded, Failed or Retry"},
		"resolve bad outcome": {kind: exagentv1.DecisionResolve, mutate: func(o *decideOptions) { o.Request.Outcome = "Maybe" },
			wantErr: `invalid --outcome "Maybe": must be Succeeded, Failed or Retry`},
		"resolve ok": {kind: exagentv1.DecisionResolve, mutate: func(o *decideOptions) { o.Request.Outcome = exagentv1.ResolveRetry }},
		"zero timeout while waiting": {kind: exagentv1.DecisionDeny, mutate: func(o *decideOptions) { o.Timeout = 0 },
			wantErr: "--timeout must be positive"},
		"zero timeout without waiting": {kind: exagentv1.DecisionDeny, mutate: func(o *decideOptions) { o.Timeout, o.Wait = 0, false }},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := newDecideOptions(genericiooptions.NewTestIOStreamsDiscard(), tc.kind)
			o.RunName = "r"
			o.dryRun = dryRunNone
			tc.mutate(o)
			err := o.Validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.wantErr, got); diff != "" {
				t.Errorf("Validate (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseDryRun(t *testing.T) {
	tests := map[string]struct {
		in      string
		want    dryRun
		wantErr string
	}{
		"none":   {in: "none", want: dryRunNone},
		"client": {in: "client", want: dryRunClient},
		"server": {in: "server", want: dryRunServer},
		"bare":   {in: dryRunUnset, wantErr: `--dry-run flag without a value was specified. A value must be set: "none", "server", or "client"`},
		"bad":    {in: "true", wantErr: `invalid dry-run value (true). Must be "none", "server", or "client"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := parseDryRun(tc.in)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if diff := cmp.Diff(tc.wantErr, gotErr); diff != "" {
				t.Fatalf("error (-want +got):\n%s", diff)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSummaryLines(t *testing.T) {
	decided := func(kind exagentv1.DecisionKind) *exagentv1.ApprovalDecision {
		d := &exagentv1.ApprovalDecision{}
		d.Name, d.Namespace = "scale-web-x1", "demo"
		d.Spec = exagentv1.ApprovalDecisionSpec{RunRef: exagentv1.LocalObjectReference{Name: "scale-web"}, Decision: kind,
			ApprovalID: "call-0-0", CallID: "c1", Outcome: exagentv1.ResolveSucceeded, Actor: &exagentv1.Actor{Username: "alice"}}
		d.Status = exagentv1.ApprovalDecisionStatus{Phase: exagentv1.DecisionRejected, Message: "payload changed since you read it"}
		return d
	}
	paused := makeRun("scale-web", "demo").Phase(exagentv1.PhaseAwaitingApproval).Obj()
	paused.Status.PendingApprovals = 2
	failed := makeRun("scale-web", "demo").Phase(exagentv1.PhaseFailed).Obj()
	failed.Status.Reason = exagentv1.ReasonScriptExhausted
	tests := map[string]struct{ got, want string }{
		"approved": {got: appliedLine(decided(exagentv1.DecisionApprove)), want: "run demo/scale-web: approval call-0-0 approved by alice (approvaldecision.exagent.io/scale-web-x1)"},
		"denied":   {got: appliedLine(decided(exagentv1.DecisionDeny)), want: "run demo/scale-web: approval call-0-0 denied by alice (approvaldecision.exagent.io/scale-web-x1)"},
		"cancel":   {got: appliedLine(decided(exagentv1.DecisionCancel)), want: "run demo/scale-web: cancelled by alice (approvaldecision.exagent.io/scale-web-x1)"},
		"resolve":  {got: appliedLine(decided(exagentv1.DecisionResolve)), want: "run demo/scale-web: call c1 resolved as Succeeded by alice (approvaldecision.exagent.io/scale-web-x1)"},
		"rejected": {got: FormatError(rejectedError(decided(exagentv1.DecisionApprove))), want: "error: payload changed since you read it (approvaldecision.exagent.io/scale-web-x1 rejected)"},
		"paused":   {got: runStateLine(paused, "paused"), want: "agentrun.exagent.io/scale-web paused: AwaitingApproval (2 pending approvals)"},
		"done":     {got: runStateLine(failed, "done"), want: "agentrun.exagent.io/scale-web done: Failed (ScriptExhausted)"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

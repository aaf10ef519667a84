//go:build upgrade

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

package upgrade

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/fixture"
	"github.com/exagent-io/exagent/internal/testing/procs"
	"github.com/exagent-io/exagent/loop"
	"github.com/exagent-io/exagent/test/chaos"
)

// ns is the namespace of every object of the scenario.
const ns = "upgrade"

// Tools of the scenario's Agents.
const (
	toolCharge   = "charge"   // http, not idempotent: the Uncertain call
	toolWire     = "wire"     // http, not idempotent, asks a person
	toolRefund   = "refund"   // http, idempotent, slow: in flight at the stop
	toolDelegate = "delegate" // agent tool: a child run of agent worker
)

// Agents of the scenario.
const (
	agentOps      = "ops"      // every tool
	agentWorker   = "worker"   // the delegated child's: wire
	agentNotified = "notified" // wire, with a signed notification sink
)

// The runs, one per state a user can leave a run in that v0.3.0 supports.
// v0.3.0 has no quorum approvals, no questions (AskHuman), no waits
// (Sleep, WaitFor, callbacks), no conversations and no triggers or
// schedules (git show 16b22cd:api/v1alpha1/ has none of their types): no
// run of the scenario is in one of those states.
const (
	runPaused    = "paused"          // AwaitingApproval on its only call
	runTwice     = "approved-paused" // one call approved and done, then AwaitingApproval on a second
	runInflight  = "inflight"        // an idempotent tool call in flight when the manager stops
	runUncertain = "uncertain"       // Uncertain: the manager was killed during a non-idempotent call
	runTree      = "tree"            // a delegation whose child is AwaitingApproval
	runRetained  = "retained"        // ended, its TTL not reached
	runNotified  = "notified"        // AwaitingApproval, its signed notification pending (sink down)
)

// memo pads every run's input and every call's arguments past the
// --seal-value-bytes the release's managers run with (sealValueBytes), so
// v0.3.0 seals them into AgentRunSegments at once and this tree must read
// its segments (and hash the sealed arguments as v0.3.0 did) to go on.
var memo = strings.Repeat("upgrade memo ", 60)

// sealValueBytes is the release's managers' --seal-value-bytes (its least).
const sealValueBytes = "512"

// retainedTTL is the retained run's ttlSecondsAfterFinished: far beyond
// the test, so its retention is pending throughout.
const retainedTTL = 3600

// leaseDuration of every run: short, so that a killed manager's runs are
// taken over within seconds.
const leaseDuration = "5s"

// scenario is the namespace's oracles: the tool servers (each effect
// counted by its idempotency key), the model server and the sink.
type scenario struct {
	pl *plane
	// reader is v0.3.0's plane's admin speaking v1alpha1, kept across the
	// upgrade: the servers' run lookups and the tree script read through
	// it (apiversion_test.go).
	reader client.Reader
	model  *chaos.ModelServer
	// tools serves charge and wire; slow serves refund and holds it until
	// the old manager has stopped.
	tools, slow *chaos.ToolServer
	sink        *sink
	sinkKey     string
}

// calls is what the model asks for at each step of run (nil: a text
// answer, the run's end).
func (s *scenario) calls(run types.NamespacedName) []chaos.ToolCall {
	call := func(id, tool string, args map[string]any) chaos.ToolCall {
		return chaos.ToolCall{ID: id, Name: tool, Args: args}
	}
	amount := map[string]any{"amount": 7, "memo": memo}
	switch run.Name {
	case runUncertain:
		return []chaos.ToolCall{call("charge-1", toolCharge, amount)}
	case runTwice:
		return []chaos.ToolCall{call("wire-1", toolWire, amount), call("wire-2", toolWire, amount)}
	case runInflight:
		return []chaos.ToolCall{call("refund-1", toolRefund, amount)}
	case runTree:
		// The child is named by the parent's UID and the call's id.
		parent := &exagentv1.AgentRun{}
		if err := s.reader.Get(context.Background(), run, parent); err != nil {
			return nil
		}
		child := loop.ChildName(run.Name, string(parent.UID), "hand-off")
		return []chaos.ToolCall{call("hand-off", toolDelegate, map[string]any{"input": chaos.RunInputPrefix + ns + "/" + child + " " + memo})}
	case runRetained:
		return nil
	}
	// paused, notified, the child of tree and the downgrade's run.
	return []chaos.ToolCall{call("wire-1", toolWire, amount)}
}

func (s *scenario) script(run types.NamespacedName, step int32) chaos.Turn {
	if calls := s.calls(run); int(step) < len(calls) {
		return chaos.Turn{Calls: []chaos.ToolCall{calls[step]}}
	}
	return chaos.Turn{Text: "done: " + run.Name}
}

// wantCalls is how many tool calls with an effect each run makes.
var wantCalls = map[string]int{runPaused: 1, runTwice: 2, runInflight: 1, runUncertain: 1, runNotified: 1}

// fixtures: the namespace, who decides (RBAC), the runs' ServiceAccount,
// the model's key and the notification sink's signing key.
func (s *scenario) fixtures() []client.Object {
	bind := func(name, role string, subject rbacv1.Subject) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}, Subjects: []rbacv1.Subject{subject}}
	}
	user := rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: alice}
	group := rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "resolvers"}
	return []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		bind("alice-approves", "exagent-approver", user),
		bind("alice-views", "exagent-viewer", user),
		bind("resolvers-resolve", "exagent-resolver", group),
		bind("resolvers-view", "exagent-viewer", group),
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "openai", Namespace: ns}, StringData: map[string]string{"apiKey": "sk-upgrade"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "notify-key", Namespace: ns}, StringData: map[string]string{"key": s.sinkKey}},
	}
}

func newSinkKey() ([]byte, string) {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	return key, "whsec_" + base64.StdEncoding.EncodeToString(key)
}

// agents are the scenario's Agents, as a user of v0.3.0 wrote them.
func (s *scenario) agents() []*exagentv1.Agent {
	model := exagentv1.ModelSpec{Provider: exagentv1.ModelProviderOpenAI, Name: "upgrade-model", BaseURL: s.model.URL,
		APIKeySecretRef: &exagentv1.SecretKeySelector{Name: "openai", Key: "apiKey"}}
	httpTool := func(name, url string, idempotent bool, timeout exagentv1.Duration) exagentv1.ToolSpec {
		t := fixture.HTTPTool(name, url+"/"+name)
		t.HTTP.Timeout, t.HTTP.Idempotent = timeout, idempotent
		return t
	}
	wire := httpTool(toolWire, s.tools.URL, false, "20s")
	policy := fixture.AskPolicy(toolWire)
	return []*exagentv1.Agent{
		{ObjectMeta: metav1.ObjectMeta{Name: agentOps, Namespace: ns}, Spec: exagentv1.AgentSpec{
			Instructions: "You are the upgrade test's agent.", Model: model,
			Tools: []exagentv1.ToolSpec{
				httpTool(toolCharge, s.tools.URL, false, "2m"), wire,
				// In flight across the stop: longer than the upgrade takes.
				httpTool(toolRefund, s.slow.URL, true, "5m"),
				fixture.AgentTool(toolDelegate, agentWorker),
			},
			Policy: policy,
			Limits: exagentv1.LimitsSpec{MaxDepth: ptr.To[int32](1), MaxRuns: ptr.To[int32](2)},
		}},
		{ObjectMeta: metav1.ObjectMeta{Name: agentWorker, Namespace: ns}, Spec: exagentv1.AgentSpec{
			Instructions: "You are the delegated agent.", Model: model, Tools: []exagentv1.ToolSpec{wire}, Policy: policy,
		}},
		{ObjectMeta: metav1.ObjectMeta{Name: agentNotified, Namespace: ns}, Spec: exagentv1.AgentSpec{
			Instructions: "You are the notifying agent.", Model: model, Tools: []exagentv1.ToolSpec{wire}, Policy: policy,
			Notify: []exagentv1.NotifySink{{Name: "pager", URL: "http://" + s.sink.addr + "/hook",
				Events:           []exagentv1.NotifyEvent{exagentv1.NotifyApprovalRequested, exagentv1.NotifyRunEnded},
				SigningSecretRef: &exagentv1.SecretKeySelector{Name: "notify-key", Key: "key"}}},
		}},
	}
}

// runObject is run name of agent.
func runObject(name, agent string) *exagentv1.AgentRun {
	return &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: exagentv1.AgentRunSpec{
		AgentRef: exagentv1.LocalObjectReference{Name: agent}, Input: chaos.RunInputPrefix + ns + "/" + name + " " + memo,
		ServiceAccountName: "agent", LeaseDuration: leaseDuration, ActiveTimeLimit: exagentv1.Never,
	}}
}

// create creates o as c's user, retrying while admission is unavailable
// (the manager serving it is starting).
func create(c client.Client, o client.Object) error {
	return procs.Poll(2*time.Minute, func() (bool, error) {
		err := c.Create(context.Background(), o.DeepCopyObject().(client.Object))
		switch {
		case err == nil, apierrors.IsAlreadyExists(err):
			return true, nil
		case apierrors.IsInvalid(err), apierrors.IsForbidden(err), apierrors.IsBadRequest(err):
			return false, fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
		return false, nil
	})
}

// runs lists the namespace's runs by name.
func (s *scenario) runs() (map[string]*exagentv1.AgentRun, error) {
	list := &exagentv1.AgentRunList{}
	if err := s.pl.c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	out := map[string]*exagentv1.AgentRun{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out, nil
}

// describe is a run's phase, reason and message, for a failure.
func describe(r *exagentv1.AgentRun) string {
	if r == nil {
		return "missing"
	}
	return fmt.Sprintf("%s (%s: %s)", r.Status.Phase, r.Status.Reason, r.Status.Message)
}

// effects is the oracles' count of each idempotency key's applied
// effects, over both tool servers.
func (s *scenario) effects() map[string]int {
	n := map[string]int{}
	for _, ts := range []*chaos.ToolServer{s.tools, s.slow} {
		for _, r := range ts.Journal() {
			if r.Applied {
				n[r.Key]++
			}
		}
	}
	return n
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// childOf is the name of tree's child run.
func childOf(runs map[string]*exagentv1.AgentRun) string {
	for name, r := range runs {
		if r.Spec.Delegation != nil && r.Spec.Delegation.Parent.Name == runTree {
			return name
		}
	}
	return ""
}

// lines indents text for a failure message.
func lines(text string) string {
	return "\n    " + strings.ReplaceAll(strings.TrimSpace(text), "\n", "\n    ")
}

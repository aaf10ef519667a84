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

package controllers_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/served"
	"github.com/exagent-io/exagent/internal/shard"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// shardWrites records, per shard, the runs each shard's manager wrote
// and the Agents it checked.
type shardWrites struct {
	mu     sync.Mutex
	runs   map[string]map[string]bool
	agents map[string]map[string]int
}

func (w *shardWrites) hooks(name string) controllers.Hooks {
	return controllers.Hooks{
		BeforeStatusWrite: func(_ context.Context, run types.NamespacedName, _ *exagentv1.AgentRunStatus) {
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.runs[name] == nil {
				w.runs[name] = map[string]bool{}
			}
			w.runs[name][run.Name] = true
		},
		AgentChecked: func(agent types.NamespacedName, _ bool) {
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.agents[name] == nil {
				w.agents[name] = map[string]int{}
			}
			w.agents[name][agent.Name]++
		},
	}
}

func (w *shardWrites) wrote(shard, run string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.runs[shard][run]
}

var twoShards = func() shard.Set {
	s, err := shard.Parse("a,b")
	if err != nil {
		panic(err)
	}
	return s
}()

// startShard starts a manager serving shard name of twoShards.
func (h *harness) startShard(name string, w *shardWrites) *manager {
	h.t.Helper()
	serving, err := shard.Only(name)
	if err != nil {
		h.t.Fatal(err)
	}
	return h.startManager(controllers.Options{Holder: "shard-" + name, Shard: serving,
		Placer: &shard.Placer{Shards: twoShards}, Hooks: w.hooks(name), Namespaces: h.served()})
}

// placedRun creates a run labelled with the shard admission would stamp.
func (h *harness) placedRun(name, agent string) string {
	h.t.Helper()
	r := fixture.MakeRun(name, h.ns).Agent(agent).Input("please do it").Obj()
	s := twoShards.Assign(h.ns, "AgentRun/"+name)
	r.Labels = map[string]string{exagentv1.LabelShard: s}
	if err := h.c.Create(context.Background(), r); err != nil {
		h.t.Fatalf("creating run %s: %v", name, err)
	}
	return s
}

// TestShardManagersServeTheirShardOnly: two managers, one per shard, on
// one namespace's runs; each run is written by its shard's manager only,
// every effect happens once, and each Agent's readiness is checked by
// the one shard that owns it.
func TestShardManagersServeTheirShardOnly(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	w := &shardWrites{runs: map[string]map[string]bool{}, agents: map[string]map[string]int{}}
	h.startShard("a", w)
	h.startShard("b", w)
	spec := exagentv1.AgentSpec{
		Model:  fixture.Scripted(fixture.CallTurn("lookup", "lookup", map[string]any{"amount": 1}), fixture.TextTurn("done")),
		Tools:  []exagentv1.ToolSpec{fixture.HTTPTool("lookup", ts.url("/lookup"))},
		Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
	}
	agents := []string{"ops", "ops-2", "ops-3", "ops-4", "ops-5", "ops-6"}
	for _, a := range agents {
		h.createAgent(a, spec)
	}
	placed := map[string]string{}
	count := map[string]int{}
	for i := 0; count["a"] < 3 || count["b"] < 3; i++ {
		name := fmt.Sprintf("run-%d", i)
		placed[name] = h.placedRun(name, "ops")
		count[placed[name]]++
	}
	want := map[string]int{}
	for name, s := range placed {
		run := h.waitPhase(name, exagentv1.PhaseSucceeded)
		want[string(run.UID)+"/lookup"] = 1
		other := map[string]string{"a": "b", "b": "a"}[s]
		if !w.wrote(s, name) || w.wrote(other, name) {
			t.Errorf("run %s of shard %s: written by shard %s %v, by shard %s %v", name, s, s, w.wrote(s, name), other, w.wrote(other, name))
		}
	}
	got := map[string]int{}
	for _, r := range ts.journal() {
		got[r.Key]++
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("effects per Idempotency-Key (-want +got):\n%s", diff)
	}
	for _, a := range agents {
		h.waitAgentReady(a, metav1.ConditionTrue, exagentv1.ReasonAgentReady)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, a := range agents {
		owner := twoShards.Assign(h.ns, shard.AgentKey(a))
		for _, s := range []string{"a", "b"} {
			if checked := w.agents[s][a] > 0; checked != (s == owner) {
				t.Errorf("Agent %s (owned by shard %s) checked by shard %s: %v", a, owner, s, checked)
			}
		}
	}
}

// TestShardMoveKeepsEveryEffectOnce reshards a run twice: paused for a
// person (its decision follows it), then mid-call. The shard it leaves
// hands it over with the call's outcome; the effect happens once.
func TestShardMoveKeepsEveryEffectOnce(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	ts.respond = func(rw http.ResponseWriter, r *http.Request, _ []byte) {
		arrived <- struct{}{}
		<-release
		rw.Header().Set("Content-Type", "application/json")
		_, _ = rw.Write([]byte(`{"refunded":true}`))
	}
	w := &shardWrites{runs: map[string]map[string]bool{}, agents: map[string]map[string]int{}}
	h.startShard("a", w)
	h.startShard("b", w)
	refund := fixture.HTTPTool("refund", ts.url("/refund"))
	refund.HTTP.Timeout = "120s" // the move happens while it is in flight
	h.createAgent("ops", exagentv1.AgentSpec{
		Model:  fixture.Scripted(fixture.CallTurn("refund", "refund", map[string]any{"amount": 5}), fixture.TextTurn("done")),
		Tools:  []exagentv1.ToolSpec{refund},
		Policy: fixture.AskPolicy("refund"),
	})
	home := h.placedRun("move-me", "ops")
	away := map[string]string{"a": "b", "b": "a"}[home]
	paused := h.waitPhase("move-me", exagentv1.PhaseAwaitingApproval)

	// Pin the namespace to the other shard: home's rebalancer moves the
	// paused run there.
	h.pinNamespace(away)
	h.waitRun("move-me", "moved to shard "+away, func(r *exagentv1.AgentRun) bool { return r.Labels[exagentv1.LabelShard] == away })
	h.approve(paused, "ok") // labelled with the run's shard, as admission does
	select {
	case <-arrived:
	case <-t.Context().Done():
		t.Fatal("the refund was never called")
	}
	if !w.wrote(away, "move-me") {
		t.Errorf("shard %s resumed the run without writing it", away)
	}
	// Mid-call: unpin, and the run goes home while the refund is in flight.
	h.pinNamespace("")
	h.waitRun("move-me", "moved back to shard "+home, func(r *exagentv1.AgentRun) bool { return r.Labels[exagentv1.LabelShard] == home })
	close(release)
	run := h.waitPhase("move-me", exagentv1.PhaseSucceeded)
	if c := run.Status.Call("refund"); c == nil || c.State != exagentv1.CallSucceeded {
		t.Errorf("the refund's call = %+v, want Succeeded (handed over with its outcome, not recovered)", c)
	}
	got := map[string]int{}
	for _, r := range ts.journal() {
		got[r.Key]++
	}
	if diff := cmp.Diff(map[string]int{string(run.UID) + "/refund": 1}, got); diff != "" {
		t.Errorf("effects per Idempotency-Key (-want +got):\n%s", diff)
	}
	var d exagentv1.ApprovalDecision
	if err := h.c.Get(t.Context(), types.NamespacedName{Namespace: h.ns, Name: "move-me-ok"}, &d); err != nil {
		t.Fatal(err)
	}
	if d.Labels[exagentv1.LabelShard] != home {
		t.Errorf("the run's decision is on shard %q, want the run's (%s)", d.Labels[exagentv1.LabelShard], home)
	}
}

// TestShardAdoptsUnlabelledRuns: a run from before shards (no label) is
// adopted onto the shard it belongs to, and runs there.
func TestShardAdoptsUnlabelledRuns(t *testing.T) {
	h := newHarness(t)
	w := &shardWrites{runs: map[string]map[string]bool{}, agents: map[string]map[string]int{}}
	h.createAgent("ops", exagentv1.AgentSpec{Model: fixture.Scripted(fixture.TextTurn("done"))})
	h.createRun("old", "ops")
	h.startShard("a", w)
	h.startShard("b", w)
	want := twoShards.Assign(h.ns, "AgentRun/old")
	run := h.waitPhase("old", exagentv1.PhaseSucceeded)
	if got := run.Labels[exagentv1.LabelShard]; got != want {
		t.Errorf("adopted onto shard %q, want %q", got, want)
	}
	if !w.wrote(want, "old") {
		t.Errorf("shard %s did not run the adopted run", want)
	}
}

// TestShardConversationRetentionOnce: every shard caches every
// Conversation, and only its owner archives and deletes it — each turn
// archived once, not once per shard.
func TestShardConversationRetentionOnce(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	sk := newSink(t)
	clk := clocktesting.NewFakeClock(time.Now())
	w := &shardWrites{runs: map[string]map[string]bool{}, agents: map[string]map[string]int{}}
	for _, name := range []string{"a", "b"} {
		serving, _ := shard.Only(name)
		h.startManager(controllers.Options{Holder: "shard-" + name, Shard: serving, Placer: &shard.Placer{Shards: twoShards},
			Hooks: w.hooks(name), Clock: clk, RetentionWorkers: 1, Namespaces: h.served()})
	}
	retentionAgent(h, "pay", ts, exagentv1.RetentionSpec{
		Archive: &exagentv1.NotifySink{Name: "audit", URL: sk.srv.URL + "/archive"},
	})
	h.createConversation("support", "pay", func(c *exagentv1.ConversationSpec) {
		c.Retention.TTL = &metav1.Duration{Duration: 10 * time.Minute}
	})
	turns := []string{"support-t1", "support-t2"}
	for _, name := range turns {
		h.labelledTurn(name, "pay", "support")
		h.shardTurn(name, twoShards.Assign(h.ns, shard.ConversationKey("support")))
		h.approve(h.waitPhase(name, exagentv1.PhaseAwaitingApproval), "ok")
		h.waitPhase(name, exagentv1.PhaseSucceeded)
	}
	h.idle("support", len(turns))
	clk.Step(11 * time.Minute)
	h.waitConversationGone("support", turns...)
	if got := len(archived(t, sk)); got != len(turns) {
		t.Errorf("the sink received %d archives, want one per turn (%d), from the conversation's shard only", got, len(turns))
	}
}

// shardTurn labels turn name with shard s, as admission would have.
func (h *harness) shardTurn(name, s string) {
	h.t.Helper()
	r := &exagentv1.AgentRun{}
	if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: name}, r); err != nil {
		h.t.Fatal(err)
	}
	patch := client.MergeFrom(r.DeepCopy())
	r.Labels[exagentv1.LabelShard] = s
	if err := h.c.Patch(context.Background(), r, patch); err != nil {
		h.t.Fatal(err)
	}
}

// pinNamespace sets (or, with "", removes) the namespace's shard pin.
func (h *harness) pinNamespace(s string) {
	h.t.Helper()
	ns := &corev1.Namespace{}
	if err := h.c.Get(context.Background(), types.NamespacedName{Name: h.ns}, ns); err != nil {
		h.t.Fatal(err)
	}
	patch := client.MergeFrom(ns.DeepCopy())
	if s == "" {
		delete(ns.Labels, exagentv1.LabelShard)
	} else {
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels[exagentv1.LabelShard] = s
	}
	if err := h.c.Patch(context.Background(), ns, patch); err != nil {
		h.t.Fatal(err)
	}
}

// served is the harness's namespace as --watch-namespaces: a shard's
// adoption then looks for unplaced runs there, not in other tests'.
func (h *harness) served() served.Namespaces {
	h.t.Helper()
	n, err := served.Parse(h.ns)
	if err != nil {
		h.t.Fatal(err)
	}
	return n
}

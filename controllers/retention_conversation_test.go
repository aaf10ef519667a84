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
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/archive"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// labelledTurn creates a turn of conv as admission stamps it: the
// Conversation as owner and the exagent.io/conversation label (the
// reaper lists a conversation's turns by it, past the cache, before it
// deletes the conversation).
func (h *harness) labelledTurn(name, agent, conv string) {
	h.t.Helper()
	c := &exagentv1.Conversation{}
	if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: conv}, c); err != nil {
		h.t.Fatal(err)
	}
	r := fixture.MakeRun(name, h.ns).Agent(agent).Input("turn " + name).Obj()
	r.Spec.ConversationRef = &exagentv1.ConversationRef{Name: conv}
	r.OwnerReferences = []metav1.OwnerReference{exagentv1.ConversationOwnerReference(c)}
	r.Labels = map[string]string{exagentv1.LabelConversation: exagentv1.LabelValue(conv)}
	if err := h.c.Create(context.Background(), r); err != nil {
		h.t.Fatalf("creating turn %s: %v", name, err)
	}
}

// approvedTurn adds a turn to conv, approves its call and waits for its end.
func (h *harness) approvedTurn(name, agent, conv string) *exagentv1.AgentRun {
	h.t.Helper()
	h.labelledTurn(name, agent, conv)
	h.approve(h.waitPhase(name, exagentv1.PhaseAwaitingApproval), "ok")
	return h.waitPhase(name, exagentv1.PhaseSucceeded)
}

// conversationExists reports whether conversation name exists.
func (h *harness) conversationExists(name string) bool {
	h.t.Helper()
	err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: name}, &exagentv1.Conversation{})
	if err != nil && !apierrors.IsNotFound(err) {
		h.t.Fatal(err)
	}
	return err == nil
}

// waitConversationGone waits until conversation name is deleted, then
// until the garbage collector deleted its turns and every segment it
// owned.
func (h *harness) waitConversationGone(name string, turns ...string) {
	h.t.Helper()
	if !eventually(func() bool { return !h.conversationExists(name) }) {
		h.t.Fatalf("conversation %s was not deleted", name)
	}
	for _, turn := range turns {
		h.waitGone(turn)
	}
	if !eventually(func() bool { return len(h.segmentsOwnedBy(name)) == 0 }) {
		h.t.Errorf("%d segments of deleted conversation %s remain", len(h.segmentsOwnedBy(name)), name)
	}
}

// segmentsOwnedBy lists the segments that conversation name owns.
func (h *harness) segmentsOwnedBy(name string) []exagentv1.AgentRunSegment {
	h.t.Helper()
	var list exagentv1.AgentRunSegmentList
	if err := h.c.List(context.Background(), &list, client.InNamespace(h.ns)); err != nil {
		h.t.Fatal(err)
	}
	var out []exagentv1.AgentRunSegment
	for _, s := range list.Items {
		if slices.ContainsFunc(s.OwnerReferences, func(o metav1.OwnerReference) bool { return o.Kind == "Conversation" && o.Name == name }) {
			out = append(out, s)
		}
	}
	return out
}

// idle waits until conversation name has no turn open and n turns.
func (h *harness) idle(name string, n int) *exagentv1.Conversation {
	h.t.Helper()
	return h.waitConversation(name, fmt.Sprintf("idle with %d turns", n), func(s exagentv1.ConversationStatus) bool {
		return s.Open == "" && s.LastTurnEndedAt != nil && len(s.Turns) == n
	})
}

// probeAgent is an Agent apart from the conversations' (no archive): the
// probe runs of h.probe.
func probeAgent(t *testing.T, h *harness) {
	retentionAgent(h, "probe", newToolServer(t), exagentv1.RetentionSpec{})
}

// TestRetentionConversationTTL: a conversation of three turns with
// spec.retention.ttl is kept while its TTL has not passed on the
// controllers' clock — a fake one, stepped by the test — counted from its
// newest turn's end, and then deleted whole: each turn archived first, in
// order, to its Agent's sink (the record names the conversation and the
// turn's place among three), then the Conversation, and the garbage
// collector deletes its turns and every segment with them.
func TestRetentionConversationTTL(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	s := newSink(t)
	clk := clocktesting.NewFakeClock(time.Now())
	h.startManager(controllers.Options{Clock: clk, RetentionWorkers: 1})
	retentionAgent(h, "pay", ts, exagentv1.RetentionSpec{
		Archive: &exagentv1.NotifySink{Name: "audit", URL: s.srv.URL + "/archive"},
	})
	probeAgent(t, h)
	h.createConversation("support", "pay", func(c *exagentv1.ConversationSpec) {
		c.Retention.TTL = &metav1.Duration{Duration: 10 * time.Minute}
	})
	turns := []string{"support-t1", "support-t2", "support-t3"}
	uids := map[string]types.UID{}
	for _, name := range turns {
		uids[name] = h.approvedTurn(name, "pay", "support").UID
		clk.Step(time.Minute) // the next turn ends later
	}
	conv := h.idle("support", 3)
	if len(h.segmentsOwnedBy("support")) == 0 {
		t.Fatal("the conversation owns no segment: the test would not see them go")
	}

	clk.Step(8 * time.Minute) // 9 minutes after the newest turn ended
	h.probe("probe-1", "probe")
	if !h.conversationExists("support") || len(s.deliveries()) != 0 {
		t.Fatalf("before its TTL passed: the conversation exists %v, %d archives sent", h.conversationExists("support"), len(s.deliveries()))
	}
	for _, name := range turns {
		if !h.exists(name) {
			t.Fatalf("turn %s was deleted before its conversation's TTL passed", name)
		}
	}

	clk.Step(2 * time.Minute)
	h.waitConversationGone("support", turns...)
	evs := archived(t, s)
	if len(evs) != 3 {
		t.Fatalf("the sink received %d archives, want one per turn (3)", len(evs))
	}
	for i, ev := range evs {
		name := turns[i]
		c := ev.Data.Conversation
		want := archive.Conversation{Name: "support", UID: string(conv.UID), Turn: i + 1, Turns: 3}
		if ev.Data.Run.Name != name || ev.Data.Run.UID != uids[name] || c == nil || *c != want {
			t.Errorf("archive %d: run %s (uid %s), conversation %+v; want turn %s, %+v", i, ev.Data.Run.Name, ev.Data.Run.UID, c, name, want)
		}
		if ev.ID != string(uids[name])+".run-archived" || ev.Data.Output != "paid" || len(ev.Data.Decisions) != 1 {
			t.Errorf("archive of %s: id %s, output %q, %d decisions", name, ev.ID, ev.Data.Output, len(ev.Data.Decisions))
		}
		var said []string
		for _, m := range ev.Data.Transcript {
			if m.Role == exagentv1.RoleUser {
				said = append(said, m.Content)
			}
		}
		if want := turns[:i+1]; len(said) != len(want) || said[i] != "turn "+name {
			t.Errorf("archive of %s: its transcript's prompts %q, want the conversation's so far, %q last", name, said, "turn "+name)
		}
	}
}

// TestRetentionConversationOpenTurnKept: a conversation whose turn waits
// for an approval is never deleted, however long past its TTL (and the
// manager's default); once the turn ends, the TTL counts from that end.
func TestRetentionConversationOpenTurnKept(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	clk := clocktesting.NewFakeClock(time.Now())
	h.startManager(controllers.Options{Clock: clk, RetentionWorkers: 1, DefaultTTLAfterFinished: time.Minute})
	retentionAgent(h, "pay", ts, exagentv1.RetentionSpec{})
	probeAgent(t, h)
	h.createConversation("paused", "pay", func(c *exagentv1.ConversationSpec) {
		c.Retention.TTL = &metav1.Duration{Duration: time.Minute}
	})
	h.approvedTurn("paused-t1", "pay", "paused")
	h.labelledTurn("paused-t2", "pay", "paused")
	t2 := h.waitPhase("paused-t2", exagentv1.PhaseAwaitingApproval)
	h.waitConversation("paused", "turn 2 open", func(s exagentv1.ConversationStatus) bool { return s.Open == "paused-t2" })

	clk.Step(2 * time.Hour) // past its TTL, the manager's, well before the approval expires (24h)
	h.probe("probe-1", "probe")
	if !h.conversationExists("paused") || !h.exists("paused-t1") || !h.exists("paused-t2") {
		t.Fatal("a conversation with a turn open (paused for an approval) was deleted, or one of its turns")
	}

	h.approve(t2, "ok")
	h.waitPhase("paused-t2", exagentv1.PhaseSucceeded)
	h.idle("paused", 2)
	clk.Step(30 * time.Second)
	h.probe("probe-2", "probe")
	if !h.conversationExists("paused") {
		t.Fatal("the conversation was deleted before its TTL passed since its newest turn ended")
	}
	clk.Step(31 * time.Second)
	h.waitConversationGone("paused", "paused-t1", "paused-t2")
}

// TestRetentionConversationKeepLast: an Agent's keepLast 1 keeps its
// newest idle conversation and deletes the older ones whole; a
// conversation with a turn open is not counted, nor deleted; the Agent's
// plain run is counted apart (turns never count as runs) and kept.
func TestRetentionConversationKeepLast(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	clk := clocktesting.NewFakeClock(time.Now())
	h.startManager(controllers.Options{Clock: clk, RetentionWorkers: 1})
	retentionAgent(h, "pay", ts, exagentv1.RetentionSpec{KeepLast: ptr.To[int32](1)})
	probeAgent(t, h)
	h.approvedRun("solo", "pay")
	clk.Step(time.Second)
	h.createConversation("open", "pay")
	h.labelledTurn("open-t1", "pay", "open")
	h.waitPhase("open-t1", exagentv1.PhaseAwaitingApproval)
	for _, name := range []string{"c1", "c2", "c3"} {
		h.createConversation(name, "pay")
		h.approvedTurn(name+"-t1", "pay", name)
		clk.Step(time.Second) // the next conversation's turn ends later
		if name != "c3" {
			h.approvedTurn(name+"-t2", "pay", name)
			clk.Step(time.Second)
		}
	}
	h.waitConversationGone("c1", "c1-t1", "c1-t2")
	h.waitConversationGone("c2", "c2-t1", "c2-t2")
	h.probe("probe", "probe")
	if !h.conversationExists("c3") || !h.exists("c3-t1") {
		t.Error("the newest idle conversation was deleted: keepLast 1 keeps it")
	}
	if !h.conversationExists("open") || !h.exists("open-t1") {
		t.Error("a conversation with a turn open was deleted by keepLast")
	}
	if !h.exists("solo") {
		t.Error("the Agent's plain run was deleted: the conversations' turns counted as runs")
	}
}

// TestRetentionConversationFailingSinkHoldsIt: a sink that fails holds
// the whole conversation — no turn deleted, each attempt journaled on the
// turn with backoff, a Warning Event on the conversation — until it
// answers 2xx; then every turn is archived and the conversation goes.
func TestRetentionConversationFailingSinkHoldsIt(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	s := newSink(t)
	s.respond = func(w http.ResponseWriter, _ *http.Request, _ int) {
		http.Error(w, "archive store is down", http.StatusServiceUnavailable)
	}
	clk := clocktesting.NewFakeClock(time.Now())
	h.startManager(controllers.Options{Clock: clk})
	retentionAgent(h, "pay", ts, exagentv1.RetentionSpec{Archive: &exagentv1.NotifySink{Name: "audit", URL: s.srv.URL}})
	h.createConversation("held", "pay", func(c *exagentv1.ConversationSpec) {
		c.Retention.TTL = &metav1.Duration{Duration: time.Minute}
	})
	h.approvedTurn("held-t1", "pay", "held")
	h.approvedTurn("held-t2", "pay", "held")
	h.idle("held", 2)
	clk.Step(61 * time.Second)
	h.waitRun("held-t1", "its archive failed", func(r *exagentv1.AgentRun) bool {
		return r.Status.Archive != nil && r.Status.Archive.Attempts >= 1 && strings.Contains(r.Status.Archive.LastError, "HTTP 503")
	})
	h.waitEvents("held", exagentv1.ReasonArchiveSinkFailing)
	clk.Step(10 * time.Minute)
	h.waitRun("held-t1", "a second attempt after the backoff", func(r *exagentv1.AgentRun) bool {
		return r.Status.Archive != nil && r.Status.Archive.Attempts >= 2
	})
	if !h.conversationExists("held") || !h.exists("held-t1") || !h.exists("held-t2") {
		t.Fatal("a conversation whose archive was never delivered was deleted, or one of its turns")
	}

	s.mu.Lock()
	s.respond = nil
	s.mu.Unlock()
	clk.Step(10 * time.Minute)
	h.waitConversationGone("held", "held-t1", "held-t2")
	var delivered []string
	for _, ev := range archived(t, s) {
		if c := ev.Data.Conversation; c != nil && c.Turns == 2 {
			delivered = append(delivered, fmt.Sprintf("%s:%d", ev.Data.Run.Name, c.Turn))
		}
	}
	slices.Sort(delivered)
	delivered = slices.Compact(delivered)
	if !slices.Equal(delivered, []string{"held-t1:1", "held-t2:2"}) {
		t.Errorf("archived turns %v, want both, each with its place", delivered)
	}
}

// TestRetentionConversationForkKeepsItsSource: a conversation that
// another forks is kept past its TTL while the fork exists — the fork's
// turns continue its segments by reference — and goes once the fork is
// deleted (the deletion wakes it: no clock step).
func TestRetentionConversationForkKeepsItsSource(t *testing.T) {
	h := newHarness(t)
	clk := clocktesting.NewFakeClock(time.Now())
	h.startManager(controllers.Options{Clock: clk, RetentionWorkers: 1})
	h.createAgent("bot", exagentv1.AgentSpec{Model: fixture.Scripted(fixture.TextTurn("an answer"))})
	probeAgent(t, h)
	minute := func(s *exagentv1.ConversationSpec) { s.Retention.TTL = &metav1.Duration{Duration: time.Minute} }
	h.createConversation("main", "bot", minute)
	h.labelledTurn("main-t1", "bot", "main")
	h.waitPhase("main-t1", exagentv1.PhaseSucceeded)
	h.createConversation("branch", "bot", func(s *exagentv1.ConversationSpec) {
		s.ForkOf = &exagentv1.ConversationFork{Name: "main", Turn: 1}
		s.Retention.TTL = &metav1.Duration{Duration: time.Hour}
	})
	h.labelledTurn("branch-t1", "bot", "branch")
	if b := h.waitPhase("branch-t1", exagentv1.PhaseSucceeded); b.Status.Turn == nil || b.Status.Turn.After != "main-t1" {
		t.Fatalf("the branch's first turn %+v, want it after main-t1", b.Status.Turn)
	}
	h.idle("main", 1)
	h.idle("branch", 1)

	clk.Step(2 * time.Minute)
	h.probe("probe", "probe")
	if !h.conversationExists("main") || !h.exists("main-t1") {
		t.Fatal("a conversation another forks was deleted while the fork exists")
	}
	branch := &exagentv1.Conversation{}
	if err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: "branch"}, branch); err != nil {
		t.Fatal(err)
	}
	if err := h.c.Delete(context.Background(), branch); err != nil {
		t.Fatal(err)
	}
	h.waitConversationGone("main", "main-t1")
}

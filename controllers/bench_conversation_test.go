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
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/segment"
	"github.com/exagent-io/exagent/store"
)

// The conversation benchmarks (issue 39, make bench): how soon a turn
// starts once the turn before it ended, and what a turn writes to the
// apiserver as the conversation grows.
var (
	convStarts      = flag.Int("conv.starts", 40, "BenchmarkConversationTurnStart: turns measured, each created once the one before ended")
	convTurns       = flag.Int("conv.turns", 100, "BenchmarkConversationBytesPerTurn: turns of the conversation")
	convAnswerBytes = flag.Int("conv.answer-bytes", 1024, "BenchmarkConversationBytesPerTurn: bytes of each turn's answer")
)

// convModel is an OpenAI-compatible endpoint that answers every request
// at once with a text of its size, and marks when the first request of
// each run arrived. The run is named by the request's last user message,
// the turn's own input ("turn NAME").
type convModel struct {
	srv    *httptest.Server
	answer string

	mu      sync.Mutex
	first   map[string]time.Time
	arrived map[string]chan struct{}
}

func newConvModel(b *testing.B, answerBytes int) *convModel {
	cm := &convModel{answer: strings.Repeat("a", answerBytes), first: map[string]time.Time{}, arrived: map[string]chan struct{}{}}
	cm.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		var req struct {
			Messages []struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		run := ""
		for _, m := range req.Messages {
			if s, ok := m.Content.(string); ok && m.Role == "user" && strings.HasPrefix(s, "turn ") {
				run = strings.TrimPrefix(s, "turn ")
			}
		}
		cm.mark(run, at)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-conv", "object": "chat.completion", "created": 1700000000, "model": "conv",
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": cm.answer}, "finish_reason": "stop"}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
		})
	}))
	b.Cleanup(cm.srv.Close)
	return cm
}

func (cm *convModel) ch(run string) chan struct{} {
	c, ok := cm.arrived[run]
	if !ok {
		c = make(chan struct{})
		cm.arrived[run] = c
	}
	return c
}

func (cm *convModel) mark(run string, at time.Time) {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	if _, seen := cm.first[run]; seen {
		return
	}
	cm.first[run] = at
	close(cm.ch(run))
}

// waitFirst is when run's first model request arrived, waiting for it.
func (cm *convModel) waitFirst(b *testing.B, run string, timeout time.Duration) time.Time {
	cm.mu.Lock()
	c := cm.ch(run)
	cm.mu.Unlock()
	select {
	case <-c:
	case <-time.After(timeout):
		b.Fatalf("run %s: no model request within %s", run, timeout)
	}
	cm.mu.Lock()
	defer cm.mu.Unlock()
	return cm.first[run]
}

// convBench is one benchmark's conversation "chat" of Agent "a" on the
// model cm, with a manager configured as cmd/manager is.
type convBench struct {
	h    *harness
	cm   *convModel
	mgr  *manager
	conv *exagentv1.Conversation
}

func newConvBench(b *testing.B, h *harness, cm *convModel) *convBench {
	cb := &convBench{h: h, cm: cm, mgr: h.startBenchManager(benchOptions(), nil)}
	h.createAgent("a", exagentv1.AgentSpec{
		Model:  exagentv1.ModelSpec{Provider: exagentv1.ModelProviderOpenAI, Name: "conv", BaseURL: cm.srv.URL + "/v1"},
		Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
	})
	h.createConversation("chat", "a")
	cb.conv = &exagentv1.Conversation{}
	must(b, h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: "chat"}, cb.conv))
	return cb
}

// run is a run of Agent a said "turn NAME"; a turn of the conversation
// when turn is set, stamped as admission would (no webhook in envtest).
func (cb *convBench) run(name string, turn bool) *exagentv1.AgentRun {
	r := &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cb.h.ns},
		Spec: exagentv1.AgentRunSpec{AgentRef: exagentv1.LocalObjectReference{Name: "a"}, Input: "turn " + name}}
	if turn {
		r.Spec.ConversationRef = &exagentv1.ConversationRef{Name: cb.conv.Name}
		r.OwnerReferences = []metav1.OwnerReference{exagentv1.ConversationOwnerReference(cb.conv)}
		r.Annotations = map[string]string{exagentv1.AnnotationTurnCreated: time.Now().UTC().Format(time.RFC3339Nano)}
	}
	return r
}

// ended waits until run name Succeeded (a benchmark of runs that must all
// succeed: anything else is a correctness failure) and, for a turn, the
// conversation lists it as its index-th turn ended and is Idle.
func (cb *convBench) ended(b *testing.B, name string, index int) *exagentv1.AgentRun {
	run := cb.h.waitRunFor(name, "its end", 2*time.Minute, func(r *exagentv1.AgentRun) bool { return r.Status.Phase.IsTerminal() })
	if run.Status.Phase != exagentv1.PhaseSucceeded {
		b.Fatalf("run %s ended %s (%s): %s", name, run.Status.Phase, run.Status.Reason, run.Status.Message)
	}
	if index > 0 {
		cb.h.waitConversation(cb.conv.Name, fmt.Sprintf("turn %d listed ended, the conversation Idle", index), func(s exagentv1.ConversationStatus) bool {
			return int(s.TurnCount) == index && len(s.Turns) > 0 && s.Turns[len(s.Turns)-1].Phase == exagentv1.PhaseSucceeded &&
				s.Phase == exagentv1.ConversationIdle
		})
	}
	return run
}

// BenchmarkConversationTurnStart: a conversation's turns are created one
// at a time, each once the one before ended (the conversation Idle), and
// each is timed from its Create to its first model request — the turn's
// gate, the read of the turn before, its continuation and claim, the
// model request's intent. The same is timed for as many plain runs of the
// same Agent on the same manager. Both are reported in ms and as ratios
// to the same apiserver's CAS round trip (rt), from the Create sent and
// from the Create answered (the turn exists). The target is a turn within
// 2 rt of existing; it is reported, not asserted.
func BenchmarkConversationTurnStart(b *testing.B) {
	n := *convStarts
	h := benchNamespace(b, "conv-start")
	u := measureCAS(b, h.ns)
	cb := newConvBench(b, h, newConvModel(b, 16))
	defer cb.mgr.stop()
	ctx := context.Background()

	// The first turn continues nothing: it starts the conversation, unmeasured.
	must(b, h.c.Create(ctx, cb.run("chat-t000", true)))
	cb.ended(b, "chat-t000", 1)

	measure := func(name string, turn bool, index int) (fromSent, fromExists time.Duration) {
		r := cb.run(name, turn)
		t0 := time.Now()
		must(b, h.c.Create(ctx, r))
		t1 := time.Now()
		first := cb.cm.waitFirst(b, name, time.Minute)
		cb.ended(b, name, index)
		return first.Sub(t0), first.Sub(t1)
	}
	var turnSent, turnExists, plainSent, plainExists []time.Duration
	b.ResetTimer()
	for i := 1; i <= n; i++ {
		s, e := measure(fmt.Sprintf("chat-t%03d", i), true, i+1)
		turnSent, turnExists = append(turnSent, s), append(turnExists, e)
	}
	for i := 1; i <= n; i++ {
		s, e := measure(fmt.Sprintf("plain-%03d", i), false, 0)
		plainSent, plainExists = append(plainSent, s), append(plainExists, e)
	}
	b.StopTimer()
	u.report(b)
	report := func(what string, d []time.Duration) (float64, float64) {
		p50, p99 := percentiles(d)
		b.ReportMetric(float64(p50.Microseconds())/1000, what+"-p50-ms")
		b.ReportMetric(float64(p99.Microseconds())/1000, what+"-p99-ms")
		b.ReportMetric(u.ratio(p50), what+"-p50/rt")
		return u.ratio(p50), u.ratio(p99)
	}
	ts50, ts99 := report("turn-create-to-model", turnSent)
	te50, te99 := report("turn-exists-to-model", turnExists)
	ps50, _ := report("plain-create-to-model", plainSent)
	pe50, _ := report("plain-exists-to-model", plainExists)
	b.Logf("turn start, %d turns each after the one before ended: Create sent → first model request p50 %.2f rt (p99 %.2f), "+
		"Create answered → first model request p50 %.2f rt (p99 %.2f; target ≤ 2 rt); a plain run: %.2f rt and %.2f rt; rt %s",
		n, ts50, ts99, te50, te99, ps50, pe50, u.rt)
	b.ReportMetric(0, "ns/op")
}

// writeLedger adds up, per turn, the bytes of every object version the
// apiserver stored for it as a watch delivers them (JSON, metadata and
// managed fields included): its run's versions, its segments, and the
// Conversation's versions written while it was the newest turn.
type writeLedger struct {
	mu      sync.Mutex
	current string
	run     map[string]int
	status  map[string]int
	segs    map[string]int
	conv    map[string]int
	writes  map[string]int
	// succeeded are the runs the watch saw Succeeded; listed is how many
	// turns the conversation's last version listed.
	succeeded map[string]bool
	listed    int
}

func newWriteLedger() *writeLedger {
	return &writeLedger{run: map[string]int{}, status: map[string]int{}, segs: map[string]int{}, conv: map[string]int{},
		writes: map[string]int{}, succeeded: map[string]bool{}}
}

func (l *writeLedger) setCurrent(turn string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.current = turn
}

// follow records every event of w until it ends.
func (l *writeLedger) follow(w watch.Interface) {
	for ev := range w.ResultChan() {
		if ev.Type != watch.Added && ev.Type != watch.Modified {
			continue
		}
		bs, _ := json.Marshal(ev.Object)
		l.mu.Lock()
		switch o := ev.Object.(type) {
		case *exagentv1.AgentRun:
			l.run[o.Name] += len(bs)
			l.status[o.Name] += jsonLen(o.Status)
			l.writes[o.Name]++
			if o.Status.Phase == exagentv1.PhaseSucceeded {
				l.succeeded[o.Name] = true
			}
		case *exagentv1.AgentRunSegment:
			l.segs[o.Spec.RunName] += len(bs)
			l.writes[o.Spec.RunName]++
		case *exagentv1.Conversation:
			l.conv[l.current] += len(bs)
			l.writes[l.current]++
			l.listed = int(o.Status.TurnCount)
		}
		l.mu.Unlock()
	}
}

// caughtUp: the watches delivered turn's end and the conversation's
// listing of its index-th turn.
func (l *writeLedger) caughtUp(turn string, index int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.succeeded[turn] && l.listed >= index
}

// window is the mean per turn of turns: the bytes of its run's versions,
// of their status alone, of its segments, of the conversation's versions,
// and its writes.
func (l *writeLedger) window(turns []string) (run, status, segs, conv, writes float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range turns {
		run += float64(l.run[t])
		status += float64(l.status[t])
		segs += float64(l.segs[t])
		conv += float64(l.conv[t])
		writes += float64(l.writes[t])
	}
	n := float64(len(turns))
	return run / n, status / n, segs / n, conv / n, writes / n
}

// BenchmarkConversationBytesPerTurn says -conv.turns turns of one
// conversation, each answered with -conv.answer-bytes bytes, each created
// once the one before ended, and adds up what the apiserver stored for
// each (writeLedger): the turn's run versions, its segments, and the
// Conversation's versions while it was the newest turn. The history is
// referenced, not copied, so a turn's own writes must not grow with the
// turns before it: it reports the bytes per turn of the first 10, middle
// 10 and last 10 turns and their ratios, with and without the
// Conversation's own writes. It fails only if a turn does not Succeed or
// the last turn's transcript lacks a turn's prompt.
func BenchmarkConversationBytesPerTurn(b *testing.B) {
	n := *convTurns
	if n < 30 {
		b.Fatalf("-conv.turns=%d: at least 30 turns (three windows of 10)", n)
	}
	ctx := context.Background()
	h := benchNamespace(b, "conv-bytes")
	ledger := newWriteLedger()
	wc, err := client.NewWithWatch(env().Config, client.Options{Scheme: env().Scheme})
	must(b, err)
	for _, list := range []client.ObjectList{&exagentv1.AgentRunList{}, &exagentv1.AgentRunSegmentList{}, &exagentv1.ConversationList{}} {
		w, err := wc.Watch(ctx, list, client.InNamespace(h.ns))
		must(b, err)
		defer w.Stop()
		go ledger.follow(w)
	}
	cb := newConvBench(b, h, newConvModel(b, *convAnswerBytes))
	defer cb.mgr.stop()

	names := make([]string, n)
	var last *exagentv1.AgentRun
	b.ResetTimer()
	start := time.Now()
	for i := range n {
		names[i] = fmt.Sprintf("chat-t%03d", i+1)
		ledger.setCurrent(names[i])
		must(b, h.c.Create(ctx, cb.run(names[i], true)))
		last = cb.ended(b, names[i], i+1)
		if !eventually(func() bool { return ledger.caughtUp(names[i], i+1) }) {
			b.Fatalf("the watches did not deliver turn %s's end", names[i])
		}
	}
	wall := time.Since(start)
	b.StopTimer()

	chain, err := store.NewSegments(h.c, h.c, 0).Chain(ctx, last)
	must(b, err)
	msgs, err := segment.Transcript(chain, last.Status.History)
	must(b, err)
	prompts := 0
	for _, m := range msgs {
		if m.Role == exagentv1.RoleUser && strings.HasPrefix(m.Content, "turn chat-t") {
			prompts++
		}
	}
	if prompts != n {
		b.Fatalf("the last turn's transcript holds %d of the %d turns' prompts", prompts, n)
	}

	type win struct {
		name                            string
		turns                           []string
		run, status, segs, conv, writes float64
	}
	wins := []win{{name: "first10", turns: names[:10]}, {name: "mid10", turns: names[n/2-5 : n/2+5]}, {name: "last10", turns: names[n-10:]}}
	for i := range wins {
		w := &wins[i]
		w.run, w.status, w.segs, w.conv, w.writes = ledger.window(w.turns)
		b.ReportMetric(w.run+w.segs+w.conv, w.name+"-B/turn")
		b.ReportMetric(w.run+w.segs, w.name+"-run+segments-B/turn")
		b.ReportMetric(w.conv, w.name+"-conversation-B/turn")
		b.Logf("%-7s turns %s…%s: %7.0f B/turn = run %7.0f (its status %7.0f) + own segments %7.0f + conversation %7.0f; %.1f writes/turn",
			w.name, w.turns[0], w.turns[len(w.turns)-1], w.run+w.segs+w.conv, w.run, w.status, w.segs, w.conv, w.writes)
	}
	first, mid, end := wins[0], wins[1], wins[2]
	ratio := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	b.ReportMetric(ratio(end.run+end.segs+end.conv, first.run+first.segs+first.conv), "last10/first10")
	b.ReportMetric(ratio(end.run+end.segs+end.conv, mid.run+mid.segs+mid.conv), "last10/mid10")
	b.ReportMetric(ratio(end.run+end.segs, first.run+first.segs), "run+segments-last10/first10")
	b.ReportMetric(ratio(end.run+end.segs, mid.run+mid.segs), "run+segments-last10/mid10")
	b.ReportMetric(ratio(end.conv, first.conv), "conversation-last10/first10")
	segs := int32(0)
	if t := last.Status.Transcript; t != nil {
		segs = t.Segments
	}
	b.ReportMetric(float64(segs), "last-turn-chain-segments")
	b.ReportMetric(wall.Seconds(), "wall-s")
	b.Logf("%d turns of %d-byte answers in %s: bytes per turn last10/first10 %.2f (run and segments %.2f, conversation %.2f), last10/mid10 %.2f (run and segments %.2f); the last turn's chain has %d segments",
		n, *convAnswerBytes, wall.Round(time.Millisecond),
		ratio(end.run+end.segs+end.conv, first.run+first.segs+first.conv), ratio(end.run+end.segs, first.run+first.segs), ratio(end.conv, first.conv),
		ratio(end.run+end.segs+end.conv, mid.run+mid.segs+mid.conv), ratio(end.run+end.segs, mid.run+mid.segs), segs)
	b.ReportMetric(0, "ns/op")
}

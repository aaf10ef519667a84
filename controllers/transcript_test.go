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
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/segment"
	"github.com/exagent-io/exagent/internal/testing/fixture"
	"github.com/exagent-io/exagent/loop"
	"github.com/exagent-io/exagent/store"
)

// page is what the reading tool returns for page n: size bytes, different per page.
func page(n, size int) string {
	head := fmt.Sprintf("page %d:", n)
	return head + strings.Repeat(string(rune('a'+n%26)), size-len(head))
}

// pagesServer is a real HTTP tool that returns page(n) for {"page": n}.
type pagesServer struct {
	srv  *httptest.Server
	size int
	mu   sync.Mutex
	log  []int
}

func newPagesServer(t testing.TB, size int) *pagesServer {
	ps := &pagesServer{size: size}
	ps.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var args struct {
			Page int `json:"page"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &args); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ps.mu.Lock()
		ps.log = append(ps.log, args.Page)
		ps.mu.Unlock()
		_, _ = w.Write([]byte(page(args.Page, ps.size)))
	}))
	t.Cleanup(ps.srv.Close)
	return ps
}

func (ps *pagesServer) calls() []int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return append([]int(nil), ps.log...)
}

// readerModel is an OpenAI-compatible endpoint that asks to read pages 0..turns-1,
// one per turn, then answers. Every request must carry the whole transcript:
// system, user, then each earlier turn's call and its page, in order.
type readerModel struct {
	srv      *httptest.Server
	turns    int
	size     int
	mu       sync.Mutex
	requests int
	bad      []string
	// lastMessages is how many messages the last request carried.
	lastMessages int
}

func newReaderModel(t testing.TB, turns, size int) *readerModel {
	rm := &readerModel{turns: turns, size: size}
	rm.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Role       string `json:"role"`
				Content    any    `json:"content"`
				ToolCallID string `json:"tool_call_id"`
				ToolCalls  []struct {
					ID       string `json:"id"`
					Function struct {
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		k := (len(req.Messages) - 2) / 2
		var problem string
		switch {
		case len(req.Messages) < 2 || req.Messages[0].Role != "system" || req.Messages[1].Role != "user":
			problem = "the transcript does not start with system, user"
		case len(req.Messages)%2 != 0:
			problem = fmt.Sprintf("%d messages: a turn is cut", len(req.Messages))
		}
		for j := 0; j < k && problem == ""; j++ {
			a, tm := req.Messages[2+2*j], req.Messages[3+2*j]
			switch {
			case a.Role != "assistant" || len(a.ToolCalls) != 1 || a.ToolCalls[0].ID != fmt.Sprintf("c%d", j) ||
				a.ToolCalls[0].Function.Arguments != fmt.Sprintf(`{"page":%d}`, j):
				problem = fmt.Sprintf("turn %d: the assistant's call is missing or wrong", j)
			case tm.Role != "tool" || tm.ToolCallID != fmt.Sprintf("c%d", j) || tm.Content != page(j, rm.size):
				problem = fmt.Sprintf("turn %d: the page is missing or wrong (%.30v)", j, tm.Content)
			}
		}
		rm.mu.Lock()
		rm.requests++
		rm.lastMessages = len(req.Messages)
		if problem != "" {
			rm.bad = append(rm.bad, problem)
		}
		rm.mu.Unlock()
		msg := map[string]any{"role": "assistant", "content": nil}
		finish := "tool_calls"
		if k >= rm.turns {
			msg["content"], finish = fmt.Sprintf("read %d pages", k), "stop"
		} else {
			msg["tool_calls"] = []any{map[string]any{"id": fmt.Sprintf("c%d", k), "type": "function",
				"function": map[string]any{"name": "read", "arguments": fmt.Sprintf(`{"page":%d}`, k)}}}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
		})
	}))
	t.Cleanup(rm.srv.Close)
	return rm
}

func (rm *readerModel) problems() ([]string, int, int) {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	return append([]string(nil), rm.bad...), rm.requests, rm.lastMessages
}

func readerAgent(h *harness, name, modelURL, toolURL string, mutate ...func(*exagentv1.AgentSpec)) {
	spec := exagentv1.AgentSpec{
		Instructions: "Read every page.",
		Model:        exagentv1.ModelSpec{Provider: exagentv1.ModelProviderOpenAI, Name: "reader", BaseURL: modelURL + "/v1"},
		Tools: []exagentv1.ToolSpec{{
			Name: "read", Description: "reads one page",
			Parameters: fixture.Raw(map[string]any{"type": "object", "properties": map[string]any{"page": map[string]any{"type": "integer"}}}),
			HTTP:       &exagentv1.HTTPTool{URL: toolURL, Timeout: "10s"},
		}},
		Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow},
	}
	for _, m := range mutate {
		m(&spec)
	}
	h.createAgent(name, spec)
}

// statusSizes watches the namespace's runs and records the encoded size of
// every status written, by run name.
type statusSizes struct {
	mu  sync.Mutex
	max map[string]int
	n   map[string]int
}

func watchStatusSizes(t *testing.T, ns string) *statusSizes {
	wc, err := client.NewWithWatch(env().Config, client.Options{Scheme: env().Scheme})
	if err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(context.Background(), &exagentv1.AgentRunList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	s := &statusSizes{max: map[string]int{}, n: map[string]int{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if ev.Type != watch.Added && ev.Type != watch.Modified {
				continue
			}
			run := ev.Object.(*exagentv1.AgentRun)
			b, _ := json.Marshal(run.Status)
			s.mu.Lock()
			s.max[run.Name] = max(s.max[run.Name], len(b))
			s.n[run.Name]++
			s.mu.Unlock()
		}
	}()
	t.Cleanup(func() { w.Stop(); <-done })
	return s
}

func (s *statusSizes) of(name string) (largest, writes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.max[name], s.n[name]
}

// transcriptOf reads the whole logical transcript of run through its segments.
func transcriptOf(t *testing.T, run *exagentv1.AgentRun) ([]exagentv1.Message, []segment.Segment) {
	t.Helper()
	chain, err := store.NewSegments(env().Client, env().Client, 0).Chain(context.Background(), run)
	if err != nil {
		t.Fatalf("reading the chain of %s: %v", run.Name, err)
	}
	msgs, err := segment.Transcript(chain, run.Status.History)
	if err != nil {
		t.Fatalf("transcript of %s: %v", run.Name, err)
	}
	return msgs, chain
}

func segmentsOf(t *testing.T, h *harness, run *exagentv1.AgentRun) []exagentv1.AgentRunSegment {
	t.Helper()
	var list exagentv1.AgentRunSegmentList
	if err := h.c.List(context.Background(), &list, client.InNamespace(h.ns),
		client.MatchingLabels{exagentv1.LabelRunUID: string(run.UID)}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// TestLongRunStaysHot: 250 turns whose tool returns 40 KiB each (≈10 MiB
// of transcript, past the 8 MiB default: the Agent asks for 16 MiB)
// Succeed; no status write exceeds the hot budget; every model request,
// the last one included, carried the whole transcript.
func TestLongRunStaysHot(t *testing.T) {
	const turns, size = 250, 40 << 10
	h := newHarness(t)
	sizes := watchStatusSizes(t, h.ns)
	ps := newPagesServer(t, size)
	rm := newReaderModel(t, turns, size)
	h.startManager(controllers.Options{})
	readerAgent(h, "reader", rm.srv.URL, ps.srv.URL, func(a *exagentv1.AgentSpec) {
		a.Limits.MaxSteps = ptrTo(int32(turns + 5))
		a.Limits.MaxTranscriptBytes = ptrTo(int64(16 << 20))
	})
	h.createRun("long", "reader", func(r *exagentv1.AgentRunSpec) { r.ActiveTimeLimit = exagentv1.Never })
	run := h.waitRunFor("long", "Succeeded", longWait, func(r *exagentv1.AgentRun) bool { return r.Status.Phase.IsTerminal() })
	if run.Status.Phase != exagentv1.PhaseSucceeded {
		t.Fatalf("run %s: %s %s", run.Status.Phase, run.Status.Reason, run.Status.Message)
	}
	bad, requests, lastMessages := rm.problems()
	if len(bad) > 0 || requests < turns+1 || lastMessages != 2+2*turns {
		t.Fatalf("model endpoint: %d requests, last with %d messages (want %d); problems: %v", requests, lastMessages, 2+2*turns, bad)
	}
	if got := len(ps.calls()); got != turns {
		t.Fatalf("tool called %d times, want %d", got, turns)
	}
	largest, writes := sizes.of("long")
	if largest > loop.DefaultHotBytes {
		t.Fatalf("a status write took %d bytes, over the hot budget %d (%d writes)", largest, loop.DefaultHotBytes, writes)
	}
	msgs, chain := transcriptOf(t, run)
	if len(msgs) != 3+2*turns || msgs[len(msgs)-2].Content != page(turns-1, size) {
		t.Fatalf("transcript read back: %d messages", len(msgs))
	}
	transcript := transcriptSize(msgs)
	t.Logf("%d turns, %d transcript bytes in %d segments (%d bytes written), largest status %d bytes over %d writes",
		turns, transcript, len(chain), run.Status.Transcript.SegmentBytes, largest, writes)
	if run.Status.Output != fmt.Sprintf("read %d pages", turns) {
		t.Errorf("output %q", run.Status.Output)
	}
}

// TestCrashBetweenSegmentsAndCommit: the manager dies after creating a
// commit's segments and before the commit; the next manager re-sends the
// idempotent read, seals the same content under the same names, and the
// run completes with nothing lost and no segment twice.
func TestCrashBetweenSegmentsAndCommit(t *testing.T) {
	const turns, size = 3, 20 << 10
	h := newHarness(t)
	ps := newPagesServer(t, size)
	rm := newReaderModel(t, turns, size)
	readerAgent(h, "reader", rm.srv.URL, ps.srv.URL, func(a *exagentv1.AgentSpec) { a.Tools[0].HTTP.Idempotent = true })
	key := types.NamespacedName{Namespace: h.ns, Name: "crash"}
	var once sync.Once
	killed := make(chan struct{})
	first := h.startManagerWith(controllers.Options{}, func(kill func()) controllers.Hooks {
		return controllers.Hooks{AfterSegmentsCreated: func(_ context.Context, run types.NamespacedName, _ []segment.Segment) {
			if run == key {
				once.Do(func() { kill(); close(killed) })
			}
		}}
	})
	t.Cleanup(first.stop)
	h.createRun("crash", "reader", func(r *exagentv1.AgentRunSpec) { r.LeaseDuration = "2s"; r.ActiveTimeLimit = exagentv1.Never })
	<-killed
	first.stop()
	h.startManager(controllers.Options{})
	run := h.waitRunFor("crash", "ended", longWait, func(r *exagentv1.AgentRun) bool { return r.Status.Phase.IsTerminal() })
	if run.Status.Phase != exagentv1.PhaseSucceeded {
		t.Fatalf("run %s: %s %s", run.Status.Phase, run.Status.Reason, run.Status.Message)
	}
	if bad, _, _ := rm.problems(); len(bad) > 0 {
		t.Fatalf("the model saw a broken transcript: %v", bad)
	}
	msgs, chain := transcriptOf(t, run)
	if len(msgs) != 3+2*turns {
		t.Fatalf("transcript has %d messages, want %d", len(msgs), 3+2*turns)
	}
	stored := segmentsOf(t, h, run)
	if len(stored) != len(chain) {
		var names []string
		for _, s := range stored {
			names = append(names, fmt.Sprintf("%d:%s", s.Spec.Index, s.Name[:8]))
		}
		t.Fatalf("%d segments stored, the chain has %d: %v", len(stored), len(chain), names)
	}
}

// TestBrokenChainStopsTheRun: a segment deleted or edited while the run
// waits for an approval ends the run TranscriptCorrupt when it resumes,
// before any IO.
func TestBrokenChainStopsTheRun(t *testing.T) {
	const size = 20 << 10
	h := newHarness(t)
	ps := newPagesServer(t, size)
	rm := newReaderModel(t, 3, size)
	readerAgent(h, "reader", rm.srv.URL, ps.srv.URL, func(a *exagentv1.AgentSpec) {
		// The second read asks a human: the run waits with a sealed page.
		a.Policy.Rules = []exagentv1.PolicyRule{{Name: "ask-later", Tools: []string{"read"}, Action: exagentv1.PolicyAsk,
			When: "args.page > 0"}}
	})
	h.startManager(controllers.Options{})
	for _, tc := range []struct {
		name   string
		break_ func(t *testing.T, seg *exagentv1.AgentRunSegment)
	}{
		{"deleted", func(t *testing.T, seg *exagentv1.AgentRunSegment) {
			if err := h.c.Delete(context.Background(), seg); err != nil {
				t.Fatal(err)
			}
		}},
		{"edited", func(t *testing.T, seg *exagentv1.AgentRunSegment) {
			// CEL keeps a segment immutable: an edit is a delete and a re-create.
			if err := h.c.Delete(context.Background(), seg); err != nil {
				t.Fatal(err)
			}
			forged := &exagentv1.AgentRunSegment{ObjectMeta: metav1.ObjectMeta{Namespace: seg.Namespace, Name: seg.Name,
				Labels: seg.Labels, OwnerReferences: seg.OwnerReferences}, Spec: *seg.Spec.DeepCopy()}
			forged.Spec.Values[0].Data = strings.ToUpper(forged.Spec.Values[0].Data)
			if err := h.c.Create(context.Background(), forged); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.createRun(tc.name, "reader", func(r *exagentv1.AgentRunSpec) { r.ActiveTimeLimit = exagentv1.Never })
			run := h.waitPhase(tc.name, exagentv1.PhaseAwaitingApproval)
			segs := segmentsOf(t, h, run)
			if len(segs) == 0 {
				t.Fatal("no segment sealed")
			}
			toolCalls, modelRequests := len(ps.calls()), func() int { _, n, _ := rm.problems(); return n }()
			tc.break_(t, &segs[0])
			h.approve(run, tc.name+"-approve")
			run = h.waitPhase(tc.name, exagentv1.PhaseFailed)
			if run.Status.Reason != exagentv1.ReasonTranscriptCorrupt || !strings.Contains(run.Status.Message, segs[0].Name) {
				t.Fatalf("reason %s message %q, want TranscriptCorrupt naming %s", run.Status.Reason, run.Status.Message, segs[0].Name)
			}
			if got, n := len(ps.calls()), func() int { _, n, _ := rm.problems(); return n }(); got != toolCalls || n != modelRequests {
				t.Fatalf("IO after the chain broke: tool calls %d → %d, model requests %d → %d", toolCalls, got, modelRequests, n)
			}
			for _, c := range run.Status.Calls {
				if c.State == exagentv1.CallStarted || c.State == exagentv1.CallUncertain {
					t.Fatalf("call %s left %s: the failed run began it", c.ID, c.State)
				}
			}
		})
	}
}

// TestTranscriptLimit: a run whose reads would pass limits.maxTranscriptBytes
// ends Failed TranscriptTooLarge before the read that could pass it.
func TestTranscriptLimit(t *testing.T) {
	const size = 40 << 10
	limit := int64(400 << 10)
	h := newHarness(t)
	ps := newPagesServer(t, size)
	rm := newReaderModel(t, 50, size)
	readerAgent(h, "reader", rm.srv.URL, ps.srv.URL, func(a *exagentv1.AgentSpec) { a.Limits.MaxTranscriptBytes = &limit })
	h.startManager(controllers.Options{})
	h.createRun("limit", "reader", func(r *exagentv1.AgentRunSpec) { r.ActiveTimeLimit = exagentv1.Never })
	run := h.waitPhase("limit", exagentv1.PhaseFailed)
	if run.Status.Reason != exagentv1.ReasonTranscriptTooLarge || !strings.Contains(run.Status.Message, "maxTranscriptBytes") {
		t.Fatalf("reason %s: %s", run.Status.Reason, run.Status.Message)
	}
	msgs, _ := transcriptOf(t, run)
	total := transcriptSize(msgs)
	reads := len(ps.calls())
	if total > limit || reads == 0 || reads > int(limit/size) {
		t.Fatalf("%d reads, transcript %d bytes, limit %d", reads, total, limit)
	}
	// Every read the tool served is in the journal with its outcome: none beyond the limit.
	seen := 0
	for _, m := range msgs {
		if m.Role == exagentv1.RoleTool {
			seen++
		}
	}
	if seen != reads {
		t.Fatalf("tool served %d reads, the transcript holds %d results", reads, seen)
	}
	// Deleting the run deletes its segments (the garbage collector: each
	// has the run as controller owner).
	if len(segmentsOf(t, h, run)) == 0 {
		t.Fatal("the run has no segments")
	}
	if err := h.c.Delete(context.Background(), run); err != nil {
		t.Fatal(err)
	}
	if !eventually(func() bool { return len(segmentsOf(t, h, run)) == 0 }) {
		t.Fatalf("%d segments of the deleted run remain", len(segmentsOf(t, h, run)))
	}
}

// TestOldShapeResumes: a run stored with its whole transcript in status
// (what the code before segments wrote; here a manager whose budgets never
// seal) resumes under a sealing manager, which compacts it on its next
// commit; the model still sees every message.
func TestOldShapeResumes(t *testing.T) {
	const size = 30 << 10
	h := newHarness(t)
	ps := newPagesServer(t, size)
	rm := newReaderModel(t, 6, size)
	readerAgent(h, "reader", rm.srv.URL, ps.srv.URL, func(a *exagentv1.AgentSpec) {
		a.Policy.Rules = []exagentv1.PolicyRule{{Name: "ask-last", Tools: []string{"read"}, Action: exagentv1.PolicyAsk, When: "args.page == 5"}}
	})
	old := h.startManagerWith(controllers.Options{HotStatusBytes: 1 << 30, SealValueBytes: 1 << 30}, nil)
	t.Cleanup(old.stop)
	h.createRun("old", "reader", func(r *exagentv1.AgentRunSpec) { r.ActiveTimeLimit = exagentv1.Never })
	run := h.waitPhase("old", exagentv1.PhaseAwaitingApproval)
	old.stop()
	if run.Status.Transcript != nil || len(segmentsOf(t, h, run)) != 0 {
		t.Fatalf("the old-shape run has a head or segments")
	}
	if b, _ := json.Marshal(run.Status); len(b) < 150<<10 {
		t.Fatalf("old-shape status of only %d bytes", len(b))
	}
	h.startManager(controllers.Options{})
	h.approve(run, "old-approve")
	run = h.waitRunFor("old", "ended", longWait, func(r *exagentv1.AgentRun) bool { return r.Status.Phase.IsTerminal() })
	if run.Status.Phase != exagentv1.PhaseSucceeded {
		t.Fatalf("run %s: %s %s", run.Status.Phase, run.Status.Reason, run.Status.Message)
	}
	if bad, _, last := rm.problems(); len(bad) > 0 || last != 2+2*6 {
		t.Fatalf("model saw %d messages last; problems: %v", last, bad)
	}
	if b, _ := json.Marshal(run.Status); len(b) > loop.DefaultHotBytes {
		t.Fatalf("status still %d bytes after compaction", len(b))
	}
	if msgs, _ := transcriptOf(t, run); len(msgs) != 3+2*6 {
		t.Fatalf("transcript %d messages", len(msgs))
	}
}

// transcriptSize is what limits.maxTranscriptBytes counts of msgs: contents and arguments.
func transcriptSize(msgs []exagentv1.Message) int64 {
	var n int64
	for _, m := range msgs {
		n += int64(len(m.Content))
		for _, tc := range m.ToolCalls {
			n += int64(len(tc.Arguments))
		}
	}
	return n
}

func ptrTo[T any](v T) *T { return &v }

// longWait bounds the runs of hundreds of steps on a loaded machine.
const longWait = 8 * time.Minute

// waitRunFor is waitRun with its own deadline.
func (h *harness) waitRunFor(name, what string, timeout time.Duration, cond func(*exagentv1.AgentRun) bool) *exagentv1.AgentRun {
	h.t.Helper()
	var last exagentv1.AgentRun
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: name}, &last)
		return err == nil && cond(&last), nil
	})
	if err != nil {
		h.t.Fatalf("run %s: timed out waiting for %s; phase %s reason %s message %q", name, what,
			last.Status.Phase, last.Status.Reason, last.Status.Message)
	}
	return &last
}

// TestSegmentsGoWithARunDeletedWhileDown: a run deleted while no manager
// runs takes its segments with it — the garbage collector deletes them
// (their controller owner is the run), the manager has no part in it: none
// runs meanwhile — and leaves a live run's alone.
func TestSegmentsGoWithARunDeletedWhileDown(t *testing.T) {
	const size = 20 << 10
	h := newHarness(t)
	ps := newPagesServer(t, size)
	rm := newReaderModel(t, 2, size)
	readerAgent(h, "reader", rm.srv.URL, ps.srv.URL)
	first := h.startManagerWith(controllers.Options{}, nil)
	t.Cleanup(first.stop)
	var runs []*exagentv1.AgentRun
	for _, name := range []string{"gone", "kept"} {
		h.createRun(name, "reader", func(r *exagentv1.AgentRunSpec) { r.ActiveTimeLimit = exagentv1.Never })
		runs = append(runs, h.waitPhase(name, exagentv1.PhaseSucceeded))
	}
	first.stop()
	for _, run := range runs {
		segs := segmentsOf(t, h, run)
		if len(segs) == 0 {
			t.Fatalf("run %s has no segments", run.Name)
		}
		for _, seg := range segs {
			if !isControlledBy(seg.OwnerReferences, run) {
				t.Fatalf("segment %s has owners %+v, want run %s (uid %s) as controller", seg.Name, seg.OwnerReferences, run.Name, run.UID)
			}
		}
	}
	if err := h.c.Delete(context.Background(), runs[0]); err != nil {
		t.Fatal(err)
	}
	if !eventually(func() bool { return len(segmentsOf(t, h, runs[0])) == 0 }) {
		t.Fatalf("%d segments of the run deleted while no manager ran remain", len(segmentsOf(t, h, runs[0])))
	}
	if _, chain := transcriptOf(t, runs[1]); len(chain) != len(segmentsOf(t, h, runs[1])) {
		t.Fatal("the live run's segments were touched")
	}
}

// isControlledBy reports whether refs hold run as controller owner.
func isControlledBy(refs []metav1.OwnerReference, run *exagentv1.AgentRun) bool {
	return slices.ContainsFunc(refs, func(o metav1.OwnerReference) bool {
		return o.Kind == "AgentRun" && o.APIVersion == exagentv1.GroupVersion.String() &&
			o.Name == run.Name && o.UID == run.UID && o.Controller != nil && *o.Controller
	})
}

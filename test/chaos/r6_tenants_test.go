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

package chaos

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/fixture"
	"github.com/exagent-io/exagent/internal/testing/procs"
	"github.com/exagent-io/exagent/model"
)

// R6's hostile tenant: what its Agents do and the bounds that answer them.
const (
	// hydraWide delegation calls at once, each to the hydra Agent itself,
	// in a tree of at most hydraMaxRuns child runs and hydraDepth levels.
	hydraWide    = 16
	hydraMaxRuns = 24
	hydraDepth   = 2
	// exfilHeader carries the hostile tenant's Secret to its tools: a
	// followed redirect would carry it to the denied address.
	exfilHeader = "X-Exfil-Token"
	exfilToken  = "hostile-token-never-sent-to-127.0.0.2"
	// hostilePerClient bounds the runs one hostile client creates.
	hostilePerClient = 40
	// rssBound is the manager's memory bound during the scenario: eight
	// huge answers cut at the 8 MiB bound are well under it; one read to
	// its end (1 GiB) is far over it.
	rssBound = 512 << 20
	// absurdRatio: the ordinary tenant's latency with the hostile one
	// beside it, over its latency alone, past which the manager no longer
	// isolates tenants at all. Latency is not what R6 asserts (timing
	// targets are the benchmarks'); this only catches the collapse, well
	// above the observed bad case (~10×, hanging MCP servers held
	// the reconcile workers) and the noise of a loaded 2-core machine.
	absurdRatio = 20
	// runDeadline is how long one run may take to reach its end; generous.
	runDeadline = 3 * time.Minute
)

// testTenants (R6): one manager serves two tenants. The ordinary one runs
// a plain Agent — a model request, one allowed http tool call, a final
// answer — through a fixed number of clients that each create a run and
// wait for its end: first alone (phase A, the baseline), then (phase B)
// while the hostile tenant, in its own namespace, at the same time
//   - calls http tools that answer 303 to an address the egress policy
//     denies, with a Secret-valued header (and one aimed there directly);
//   - points a model at an endpoint that streams a 1 GiB answer slowly;
//   - uses an MCP server that accepts connections and never answers;
//   - names an MCP server whose tools/list pages 8 MiB tools for ever;
//   - delegates hydraWide calls at once to its own Agent, with small
//     limits.maxRuns and maxDepth.
//
// Asserted: every ordinary run Succeeds in both phases, each of its tool
// effects happened exactly once, and the history check holds; the denied
// server received nothing; the huge answers end their runs Failed
// (ModelAnswerTooLarge) and were cut near the bound; the manager's peak
// RSS stays under rssBound; the hanging MCP server's runs wait, Ready
// False with reason MCPServerUnavailable, and never Succeed; no
// delegation tree passes maxRuns runs below its root or maxDepth levels.
// The ordinary tenant's p50 and p95 latency in B over A is reported (a
// figure, not an assertion) and fails the test only past absurdRatio.
func testTenants(t *testing.T) {
	cl := sharedCluster(t)
	sz := sizes()
	ord := newScenario(t, cl, "r6-ordinary", func(_ types.NamespacedName, step int32) Turn {
		if step == 0 {
			return Turn{Calls: []ToolCall{{ID: "charge", Name: toolCharge, Args: map[string]any{"amount": 1}}}}
		}
		return Turn{Text: "done"}
	})
	ord.createAgent("plain")
	hos := newHostile(t, cl)

	// 127.0.0.1 is allowed (every test manager's flag); 127.0.0.2 is denied
	// by an explicit deny, which wins over any allow.
	mgr, err := cl.startManager(managerOpts{name: "r6", args: []string{"--egress-deny-cidrs", "127.0.0.2/32"}})
	if err != nil {
		t.Fatal(err)
	}
	defer mgr.Kill()
	mem := watchMemory(mgr)
	defer mem.stop()

	startA := time.Now()
	alone := ord.closedLoop(t, "a", "plain", sz.tenantRuns, sz.tenantClients)
	tookA := time.Since(startA)
	_, peakA := mem.peaks()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hostileDone := hos.start(ctx, sz)
	checkPaging := startPaging(t, cl, hos) // Agents on an MCP server that pages 8 MiB tools for ever (r6_paging_test.go)
	// Phase B starts once every hostile behaviour is under way: the hanging
	// server holds a listing's connection (however many listings the
	// manager makes of one server), a huge answer is streaming.
	if err := procs.Poll(2*time.Minute, func() (bool, error) {
		accepted, _ := hos.mcp.Accepted()
		ended, open := hos.huge.Written()
		return accepted > 0 && len(ended)+open > 0, nil
	}); err != nil {
		accepted, _ := hos.mcp.Accepted()
		ended, open := hos.huge.Written()
		t.Fatalf("the hostile tenant did not get going: %v (hanging MCP connections %d, huge answers %d)\n%s", err, accepted, len(ended)+open, mgr.Tail())
	}
	startB := time.Now()
	beside := ord.closedLoop(t, "b", "plain", sz.tenantRuns, sz.tenantClients)
	tookB := time.Since(startB)
	cancel()
	hostileDone.Wait()
	rss, peakB := mem.peaks()

	ord.checkEffectsOnce(t)
	hos.check(t)
	checkPaging()
	tarpitRetention(t, cl) // a tarpit archive sink beside another tenant's retention (r6_retention_test.go)
	if mem.err != nil {
		t.Logf("chaos r6: the manager's memory was not read: %v", mem.err)
	} else if peakB > rssBound {
		t.Errorf("the manager's peak RSS was %d MiB with the hostile tenant (%d MiB alone), want under %d MiB",
			peakB>>20, peakA>>20, rssBound>>20)
	}

	a, b := percentiles(alone), percentiles(beside)
	r50, r95 := ratio(b.p50, a.p50), ratio(b.p95, a.p95)
	t.Logf("chaos r6: ordinary tenant, %d runs per phase by %d clients: alone p50 %s p95 %s max %s (phase %s); "+
		"beside the hostile tenant p50 %s p95 %s max %s (phase %s); ratio B/A p50 %.2f× p95 %.2f×; "+
		"manager RSS peak %d MiB alone, %d MiB beside (%d MiB at the end, bound %d MiB)",
		sz.tenantRuns, sz.tenantClients, a.p50, a.p95, a.max, tookA.Round(100*time.Millisecond),
		b.p50, b.p95, b.max, tookB.Round(100*time.Millisecond), r50, r95, peakA>>20, peakB>>20, rss>>20, rssBound>>20)
	if r50 > absurdRatio || r95 > absurdRatio {
		t.Errorf("the ordinary tenant's latency beside the hostile one is p50 %.1f×, p95 %.1f× its latency alone: "+
			"past %d× the manager does not isolate tenants", r50, r95, absurdRatio)
	}
	ord.verify()
}

// closedLoop runs n runs of agent named PREFIX-NNN through clients, each
// creating one run and waiting for its end before the next, and returns
// the latency of each (its creation to its Succeeded, both as the
// recorder's watch delivered them). A run that does not Succeed fails the
// test.
func (s *scenario) closedLoop(t *testing.T, prefix, agent string, n, clients int) []time.Duration {
	t.Helper()
	next := make(chan string, n)
	for i := range n {
		next <- fmt.Sprintf("%s-%03d", prefix, i)
	}
	close(next)
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for name := range next {
				if err := s.createRun(name, agent); err != nil {
					t.Error(err)
					continue
				}
				if r, ok := s.await(name, runDeadline, ended); !ok || r.Status.Phase != exagentv1.PhaseSucceeded {
					t.Errorf("ordinary run %s: %s, want Succeeded within %s", name, describeRun(r), runDeadline)
				}
			}
		})
	}
	wg.Wait()
	runs := s.rec.Runs()
	var out []time.Duration
	for i := range n {
		name := fmt.Sprintf("%s-%03d", prefix, i)
		s.mu.Lock()
		uid := s.uids[name]
		s.mu.Unlock()
		if d, ok := succeededAfter(runs[uid]); ok {
			out = append(out, d)
		}
	}
	return out
}

// succeededAfter is how long after the first recorded version of a run
// the first Succeeded one was recorded.
func succeededAfter(vs []Version) (time.Duration, bool) {
	vs = objects(sortedVersions(vs))
	if len(vs) == 0 {
		return 0, false
	}
	for _, v := range vs {
		if v.Run.Status.Phase == exagentv1.PhaseSucceeded {
			return v.Seen.Sub(vs[0].Seen), true
		}
	}
	return 0, false
}

// await waits until the newest recorded version of run name satisfies
// done, or timeout passes (false, with the newest version seen).
func (s *scenario) await(name string, timeout time.Duration, done func(*exagentv1.AgentRun) bool) (*exagentv1.AgentRun, bool) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		changed := s.rec.Changed()
		if r := s.rec.Latest(name); r != nil && done(r) {
			return r, true
		}
		select {
		case <-changed:
		case <-deadline.C:
			return s.rec.Latest(name), false
		}
	}
}

func ended(r *exagentv1.AgentRun) bool { return r.Status.Phase.IsTerminal() }

func describeRun(r *exagentv1.AgentRun) string {
	if r == nil {
		return "never seen"
	}
	return fmt.Sprintf("%s (%s: %s)", phaseOrNew(r.Status.Phase), r.Status.Reason, excerpt(r.Status.Message))
}

// checkEffectsOnce: each run's charge was applied exactly once by the
// tool server (the history check finds duplicates; this also finds none).
func (s *scenario) checkEffectsOnce(t *testing.T) {
	t.Helper()
	applied := map[types.UID]int{}
	for _, r := range s.tools.Journal() {
		if r.Applied {
			applied[r.RunUID]++
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, name := range s.runs {
		if n := applied[s.uids[name]]; n != 1 {
			t.Errorf("ordinary run %s: its charge was applied %d times, want exactly once", name, n)
		}
	}
}

// latencies are one phase's figures.
type latencies struct{ p50, p95, max time.Duration }

func percentiles(ds []time.Duration) latencies {
	if len(ds) == 0 {
		return latencies{}
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	at := func(q float64) time.Duration { return ds[int(q*float64(len(ds)-1)+0.5)] }
	return latencies{p50: at(0.50).Round(time.Millisecond), p95: at(0.95).Round(time.Millisecond), max: ds[len(ds)-1].Round(time.Millisecond)}
}

func ratio(b, a time.Duration) float64 {
	if a <= 0 {
		return 0
	}
	return float64(b) / float64(a)
}

// memoryWatch samples a process's resident set; the kernel's high-water
// mark (VmHWM) is the peak, which no sample can miss.
type memoryWatch struct {
	proc *procs.Process
	done chan struct{}
	wg   sync.WaitGroup

	mu   sync.Mutex
	rss  int64
	peak int64
	err  error
}

func watchMemory(p *procs.Process) *memoryWatch {
	m := &memoryWatch{proc: p, done: make(chan struct{})}
	m.sample()
	m.wg.Go(func() {
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-m.done:
				return
			case <-tick.C:
				m.sample()
			}
		}
	})
	return m
}

func (m *memoryWatch) sample() {
	mem, err := m.proc.Memory()
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		if m.err == nil {
			m.err = err
		}
		return
	}
	m.rss, m.peak = mem.RSS, max(m.peak, mem.Peak, mem.RSS)
}

// peaks returns the resident set now and its peak so far.
func (m *memoryWatch) peaks() (rss, peak int64) {
	m.sample()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rss, m.peak
}

func (m *memoryWatch) stop() {
	select {
	case <-m.done:
	default:
		close(m.done)
	}
	m.wg.Wait()
}

// hostile is R6's hostile tenant: its namespace (a scenario of its own,
// with its recorder), its endpoints and Agents, and the runs it made.
type hostile struct {
	t      *testing.T
	s      *scenario
	denied *deniedServer
	redir  *redirector
	huge   *hugeModel
	mcp    *hangingMCP

	mu   sync.Mutex
	runs map[string][]string // by Agent
}

// The hostile tenant's Agents.
const (
	agentExfil = "exfil" // http tools: a 303 to the denied address, and the denied address itself
	agentHuge  = "huge"  // a model endpoint streaming 1 GiB
	agentHang  = "hang"  // an mcp tool of a server that never answers
	agentHydra = "hydra" // delegates hydraWide calls at once to itself
)

func newHostile(t *testing.T, cl *cluster) *hostile {
	t.Helper()
	h := &hostile{t: t, runs: map[string][]string{}}
	h.s = newScenario(t, cl, "r6-hostile", func(types.NamespacedName, int32) Turn { return Turn{Text: "unused"} })
	var err error
	if h.denied, err = newDeniedServer(); err != nil {
		t.Fatalf("listening on 127.0.0.2 (the denied address): %v", err)
	}
	t.Cleanup(h.denied.Close)
	if h.redir, err = newRedirector(h.denied.URL, exfilHeader); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.redir.Close)
	if h.huge, err = newHugeModel(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.huge.Close)
	if h.mcp, err = newHangingMCP(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.mcp.Close)

	ctx := context.Background()
	ns := h.s.ns
	if err := cl.c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "exfil", Namespace: ns},
		StringData: map[string]string{"token": exfilToken}}); err != nil {
		t.Fatal(err)
	}
	obj := fixture.Raw(map[string]any{"type": "object", "properties": map[string]any{"amount": map[string]any{"type": "integer"}}})
	header := []exagentv1.SecretHeader{{Name: exfilHeader, ValueFrom: exagentv1.SecretKeySelector{Name: "exfil", Key: "token"}}}
	allow := exagentv1.PolicySpec{Default: exagentv1.PolicyAllow}
	calls := func(cs ...exagentv1.ScriptToolCall) exagentv1.ScriptTurn { return exagentv1.ScriptTurn{ToolCalls: cs} }
	var spawn []exagentv1.ScriptToolCall
	for i := range hydraWide {
		spawn = append(spawn, exagentv1.ScriptToolCall{ID: fmt.Sprintf("spawn%02d", i), Name: "spawn",
			Arguments: fixture.Raw(map[string]any{"input": fmt.Sprintf("head %d", i)})})
	}
	for _, a := range []*exagentv1.Agent{
		{ObjectMeta: metav1.ObjectMeta{Name: agentExfil, Namespace: ns}, Spec: exagentv1.AgentSpec{
			Model: fixture.Scripted(
				calls(exagentv1.ScriptToolCall{ID: "redirected", Name: "redirected", Arguments: fixture.Raw(map[string]any{"amount": 1})},
					exagentv1.ScriptToolCall{ID: "direct", Name: "direct", Arguments: fixture.Raw(map[string]any{"amount": 1})}),
				fixture.TextTurn("exfiltrated?"),
			),
			Tools: []exagentv1.ToolSpec{
				{Name: "redirected", Description: "answers 303 to the denied address", Parameters: obj,
					HTTP: &exagentv1.HTTPTool{URL: h.redir.URL + "/charge", Timeout: "20s", Headers: header}},
				{Name: "direct", Description: "the denied address itself", Parameters: obj,
					HTTP: &exagentv1.HTTPTool{URL: h.denied.URL + "/collect", Timeout: "20s", Headers: header}},
			},
			Policy: allow,
		}},
		{ObjectMeta: metav1.ObjectMeta{Name: agentHuge, Namespace: ns}, Spec: exagentv1.AgentSpec{
			Model: exagentv1.ModelSpec{Provider: exagentv1.ModelProviderOpenAI, Name: "huge", BaseURL: h.huge.URL,
				APIKeySecretRef: &exagentv1.SecretKeySelector{Name: "openai", Key: "apiKey"}},
		}},
		{ObjectMeta: metav1.ObjectMeta{Name: agentHang, Namespace: ns}, Spec: exagentv1.AgentSpec{
			Model:  fixture.Scripted(fixture.TextTurn("never reached")),
			Tools:  []exagentv1.ToolSpec{{Name: "lookup", Description: "a tool of a server that never answers", MCP: &exagentv1.MCPTool{URL: h.mcp.URL}}},
			Policy: allow,
		}},
		{ObjectMeta: metav1.ObjectMeta{Name: agentHydra, Namespace: ns}, Spec: exagentv1.AgentSpec{
			Model: fixture.Scripted(
				calls(spawn...), fixture.TextTurn("every head spawned"),
			),
			Tools:  []exagentv1.ToolSpec{{Name: "spawn", Description: "delegate to hydra", Agent: &exagentv1.AgentTool{AgentRef: exagentv1.LocalObjectReference{Name: agentHydra}}}},
			Policy: allow,
			Limits: exagentv1.LimitsSpec{MaxRuns: new(int32(hydraMaxRuns)), MaxDepth: new(int32(hydraDepth))},
		}},
	} {
		if err := cl.c.Create(ctx, a); err != nil {
			t.Fatalf("creating the hostile agent %s: %v", a.Name, err)
		}
	}
	return h
}

// start creates the hanging runs and starts the hostile clients; each
// creates a run and waits for where it stops (its end, or Uncertain)
// until ctx ends. The WaitGroup is done when every client stopped.
func (h *hostile) start(ctx context.Context, sz size) *sync.WaitGroup {
	var wg sync.WaitGroup
	for i := range sz.hangingRuns {
		h.create(fmt.Sprintf("hang-%03d", i), agentHang)
	}
	stopsAt := map[string]func(*exagentv1.AgentRun) bool{
		agentExfil: func(r *exagentv1.AgentRun) bool { return ended(r) || r.Status.Phase == exagentv1.PhaseUncertain },
		agentHuge:  ended,
		agentHydra: ended,
	}
	for agent, clients := range map[string]int{agentExfil: sz.exfilClients, agentHuge: sz.hugeClients, agentHydra: sz.hydraClients} {
		for c := range clients {
			wg.Go(func() {
				for i := 0; i < hostilePerClient && ctx.Err() == nil; i++ {
					name := fmt.Sprintf("%s-%d-%03d", agent, c, i)
					if !h.create(name, agent) {
						return
					}
					if r, ok := h.s.await(name, runDeadline, stopsAt[agent]); !ok {
						h.t.Errorf("hostile run %s did not stop within %s: %s", name, runDeadline, describeRun(r))
						return
					}
				}
			})
		}
	}
	return &wg
}

func (h *hostile) create(name, agent string) bool {
	if err := h.s.createRun(name, agent); err != nil {
		h.t.Error(err)
		return false
	}
	h.mu.Lock()
	h.runs[agent] = append(h.runs[agent], name)
	h.mu.Unlock()
	return true
}

// check asserts what bounded each hostile behaviour, and logs what the
// hostile tenant did.
func (h *hostile) check(t *testing.T) {
	t.Helper()
	h.mu.Lock()
	runs := map[string][]string{}
	for k, v := range h.runs {
		runs[k] = slices.Clone(v)
	}
	h.mu.Unlock()

	// Redirects: not followed, so the denied server got nothing — neither
	// through the 303 nor dialled directly; the 303 is an unknown outcome
	// (the server may have acted), the direct call a clean refusal.
	deniedRule := "is in 127.0.0.2/32 (--egress-deny-cidrs)"
	for _, name := range runs[agentExfil] {
		r := h.s.rec.Latest(name)
		if r == nil || r.Status.Phase != exagentv1.PhaseUncertain {
			t.Errorf("hostile run %s: %s, want Uncertain (the 303 is an unknown outcome)", name, describeRun(r))
			continue
		}
		if c := r.Status.Call("redirected"); c == nil || c.State != exagentv1.CallUncertain {
			t.Errorf("hostile run %s: the redirected call is %v, want Uncertain", name, callState(c))
		}
		if c := r.Status.Call("direct"); c == nil || c.State != exagentv1.CallFailed || c.Outcome == nil || !strings.Contains(c.Outcome.Result, deniedRule) {
			t.Errorf("hostile run %s: the direct call is %v, want Failed naming %q", name, callState(c), deniedRule)
		}
	}
	if n := h.denied.hits.Load(); n != 0 {
		t.Errorf("the denied server (127.0.0.2) received %d requests, want none", n)
	}
	seen := h.redir.Seen()
	for _, v := range seen {
		if v != exfilToken {
			t.Errorf("the redirecting tool got %s %q, want the Secret's value (the header is sent to the allowed address)", exfilHeader, v)
		}
	}
	if len(seen) != len(runs[agentExfil]) {
		t.Errorf("the redirecting tool got %d requests for %d runs, want one each (an unknown outcome is never re-sent)", len(seen), len(runs[agentExfil]))
	}

	// Huge answers: cut at the bound, the run Failed clearly.
	want := "the model's answer is over the " + fmt.Sprint(model.MaxAnswerBytes>>20) + " MiB bound"
	for _, name := range runs[agentHuge] {
		r := h.s.rec.Latest(name)
		if r == nil || r.Status.Phase != exagentv1.PhaseFailed || r.Status.Reason != exagentv1.ReasonModelAnswerTooLarge ||
			!strings.Contains(r.Status.Message, want) {
			t.Errorf("hostile run %s: %s, want Failed (%s) naming %q", name, describeRun(r), exagentv1.ReasonModelAnswerTooLarge, want)
		}
	}
	// What the endpoint could write before the manager hung up: the bound
	// and the sockets' buffers, never the gigabyte.
	const slack = 32 << 20
	written, _ := h.huge.Written()
	var most int64
	for _, n := range written {
		most = max(most, n)
	}
	if most > model.MaxAnswerBytes+slack {
		t.Errorf("the huge model endpoint wrote %d MiB of one answer before the manager hung up, want at most the %d MiB bound and %d MiB of buffers",
			most>>20, model.MaxAnswerBytes>>20, slack>>20)
	}

	// The hanging MCP server: its runs wait with a reason that names it,
	// and never Succeed.
	for _, name := range runs[agentHang] {
		r, ok := h.s.await(name, runDeadline, func(r *exagentv1.AgentRun) bool {
			c := meta.FindStatusCondition(r.Status.Conditions, exagentv1.ConditionReady)
			return c != nil && c.Status == metav1.ConditionFalse && c.Reason == exagentv1.ReasonMCPServerUnavailable &&
				strings.Contains(c.Message, h.mcp.URL)
		})
		if !ok {
			t.Errorf("hostile run %s: %s; want it waiting, Ready=False %s naming %s", name, describeRun(r),
				exagentv1.ReasonMCPServerUnavailable, h.mcp.URL)
		}
	}
	hangUIDs := map[types.UID]bool{}
	for uid, vs := range h.s.rec.Runs() {
		for _, v := range objects(vs) {
			if v.Run.Spec.AgentRef.Name == agentHang {
				hangUIDs[uid] = true
				if v.Run.Status.Phase.IsTerminal() {
					t.Errorf("hostile run %s on the hanging MCP server reached %s, want it waiting (never Succeeded)", v.Run.Name, describeRun(v.Run))
					break
				}
			}
		}
	}

	// Delegation: every tree within maxRuns runs below its root and
	// maxDepth levels, counted from every run the recorder ever saw.
	roots := map[types.UID]string{}
	for _, name := range runs[agentHydra] {
		h.s.mu.Lock()
		roots[h.s.uids[name]] = name
		h.s.mu.Unlock()
		if r := h.s.rec.Latest(name); r == nil || r.Status.Phase != exagentv1.PhaseSucceeded {
			t.Errorf("hydra root %s: %s, want Succeeded (the calls past the bounds fail and the model is told)", name, describeRun(r))
		}
	}
	below := map[types.UID]int{}
	all, deepest := h.s.rec.Runs(), 0
	for _, vs := range all {
		vs = objects(vs)
		if len(vs) == 0 || vs[0].Run.Spec.Delegation == nil {
			continue
		}
		d := vs[0].Run.Spec.Delegation
		below[types.UID(d.Root.UID)]++
		deepest = max(deepest, len(d.Ancestry))
		if _, ok := roots[types.UID(d.Root.UID)]; !ok {
			t.Errorf("child run %s names root %s, which the hostile tenant did not create", vs[0].Run.Name, d.Root.Name)
		}
	}
	children := 0
	for uid, name := range roots {
		children += below[uid]
		if below[uid] > hydraMaxRuns {
			t.Errorf("hydra root %s: %d child runs in its tree, want at most limits.maxRuns = %d", name, below[uid], hydraMaxRuns)
		}
	}
	if deepest > hydraDepth {
		t.Errorf("a hydra run is %d levels below its root, want at most limits.maxDepth = %d", deepest, hydraDepth)
	}
	// And so the hostile namespace holds no more runs than it created plus
	// the trees' bound.
	created := len(runs[agentExfil]) + len(runs[agentHuge]) + len(runs[agentHang])
	if total, bound := len(all), created+len(roots)*(hydraMaxRuns+1); total > bound {
		t.Errorf("the hostile namespace holds %d runs; it created %d plus %d delegation roots, bound %d", total, created, len(roots), bound)
	}
	accepted, open := h.mcp.Accepted()
	t.Logf("chaos r6: hostile tenant: %d redirecting runs (the denied server received %d requests); %d huge-answer runs "+
		"(at most %d MiB of an answer written); %d runs on the hanging MCP server (%d connections accepted, %d held at the end); "+
		"%d delegation roots of %d calls at once with %d child runs (%d per tree at most, %d levels deep at most)",
		len(runs[agentExfil]), h.denied.hits.Load(), len(runs[agentHuge]), most>>20, len(hangUIDs), accepted, open,
		len(roots), hydraWide, children, maxOf(below), deepest)
}

func maxOf(m map[types.UID]int) int {
	n := 0
	for _, v := range m {
		n = max(n, v)
	}
	return n
}

func callState(c *exagentv1.ToolCall) string {
	if c == nil {
		return "missing"
	}
	if c.Outcome != nil {
		return fmt.Sprintf("%s (%s)", c.State, excerpt(c.Outcome.Result))
	}
	return string(c.State)
}

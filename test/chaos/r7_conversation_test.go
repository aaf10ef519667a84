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
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/authz"
	"github.com/exagent-io/exagent/internal/testing/procs"
)

// convAgent is the Agent of every conversation of R7.
const convAgent = "talker"

// convManagers is how many manager processes (no leader election) R7 runs.
const convManagers = 2

// testConversations (R7): conversations of several turns, each turn a
// model request that asks for one http call (odd turns charge, not
// idempotent; even turns refund, idempotent), the call, and a model
// request answered with the turn's final text — run by two manager
// processes with no leader election, SIGKILLed
//
//   - inside a turn, in its tool call: one turn of each conversation has
//     its call held by the tool server (the effect applied, no answer
//     yet) and the manager that sent it is killed;
//   - between turns: after one turn of each conversation ended, every
//     manager is killed at once — in half the conversations the next
//     turn was created with the earlier ones and waits (the kill races
//     its claim; where it landed is counted), in the other half turns are
//     said one at a time, like a person, and the next one is created
//     while no manager runs, so the kill lands after one turn's outcome
//     and before the next's claim every time;
//   - at random, one manager at a time, for a bounded time.
//
// bob says every turn (the managers' credentials may add turns only to
// RoundRobin conversations). Oracle (CheckConversations, beside the
// history check): every turn's effect happened exactly once, turns of one
// conversation ran in order (in the store and on the wire), no turn was
// lost, and every model request of a turn carried the earlier turns'
// messages; each Conversation's status comes to list its turns as they
// ended. Uncertain calls are resolved by carol with the oracle's
// evidence, as in the other scenarios.
func testConversations(t *testing.T) {
	cl := sharedCluster(t)
	sz := sizes()
	s := newScenario(t, cl, "r7", func(run types.NamespacedName, step int32) Turn {
		k := turnIndex(run.Name)
		if step == 0 {
			return Turn{Calls: []ToolCall{{ID: turnCallID(k), Name: turnTool(k), Args: map[string]any{"amount": k}}}}
		}
		return Turn{Text: turnAnswer(run.Name)}
	})
	s.createAgent(convAgent)
	// bob says the turns: the manager's own identity (the admin
	// credentials) may only add turns to RoundRobin conversations.
	for _, o := range []client.Object{
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "turn-taker", Namespace: s.ns}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"exagent.io"}, Resources: []string{"agentruns"}, Verbs: []string{"create", "get", "list"}},
			{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, ResourceNames: []string{"agent"}, Verbs: []string{authz.VerbUseServiceAccount}},
		}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bob-takes-turns", Namespace: s.ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "turn-taker"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: bob}}},
	} {
		if err := cl.c.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	// A call takes a moment: random kills land in calls as well as commits.
	s.tools.SetLatency(150 * time.Millisecond)
	s.model.SetLatency(50 * time.Millisecond)

	rng := rand.New(rand.NewPCG(uint64(seed()), 7))
	r := &convRun{scenario: s, convs: Conversations{}, chatty: map[string]bool{}, between: map[string]int{},
		holdOnce: map[string]bool{}, pool: &managerPool{cl: cl, name: "r7", procs: make([]*procs.Process, convManagers),
			holders: make([]string, convManagers), stop: make(chan struct{})}}
	for i := range sz.convs {
		c := fmt.Sprintf("c%02d", i)
		for k := 1; k <= sz.convTurns; k++ {
			name := fmt.Sprintf("%s-t%d", c, k)
			r.convs[c] = append(r.convs[c], ConvTurn{Name: name, Input: RunInputPrefix + s.ns + "/" + name,
				CallID: turnCallID(k), Answer: turnAnswer(name)})
		}
		r.order = append(r.order, c)
		r.chatty[c] = i%2 == 1
		r.holdOnce[fmt.Sprintf("%s-t%d", c, 1+rng.IntN(sz.convTurns))] = true
		if sz.convTurns > 1 {
			r.between[c] = 1 + rng.IntN(sz.convTurns-1)
		}
		conv := &exagentv1.Conversation{ObjectMeta: metav1.ObjectMeta{Name: c, Namespace: s.ns},
			Spec: exagentv1.ConversationSpec{AgentRef: exagentv1.LocalObjectReference{Name: convAgent}}}
		if err := cl.c.Create(context.Background(), conv); err != nil {
			t.Fatalf("creating conversation %s: %v", c, err)
		}
	}
	// Each chosen turn's first tool request is held once: the kill is then
	// inside the call, its effect applied and its answer not yet given.
	r.chosen = len(r.holdOnce)
	s.tools.HoldWhen(func(q Request) bool {
		if !r.holdOnce[q.Run.Name] {
			return false
		}
		delete(r.holdOnce, q.Run.Name) // HoldWhen's cond runs under the server's lock
		return true
	})

	for i := range convManagers {
		if err := r.pool.start(i); err != nil {
			t.Fatal(err)
		}
	}
	defer r.pool.stopAll()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	decide, stopDeciding := context.WithCancel(context.Background())
	defer stopDeciding()
	go s.decideLoop(decide)
	between := make(chan betweenKill, len(r.order))
	killerDone := make(chan struct{})
	go func() {
		defer close(killerDone)
		r.killer(ctx, between, rand.New(rand.NewPCG(uint64(seed()), 8)), sz.killFor)
	}()
	go r.watchEnds(ctx, between)

	// The conversations are said at once: queued ones create every turn
	// now, chatty ones one turn at a time.
	deadline := 4*time.Minute + sz.killFor
	var wg sync.WaitGroup
	for _, c := range r.order {
		wg.Go(func() {
			if err := r.say(ctx, c, between, deadline); err != nil {
				t.Errorf("seed %d: %v", seed(), err)
			}
		})
	}
	wg.Wait()
	s.waitDone(deadline)
	cancel()
	<-killerDone
	if err := r.pool.settle(); err != nil {
		t.Fatalf("seed %d: restarting a manager: %v", seed(), err)
	}
	statusViolations := r.checkStatuses(2 * time.Minute)
	stopDeciding()

	h := s.history()
	mine, st := CheckConversations(h, r.convs)
	mine = append(mine, statusViolations...)
	all := append(Check(h), mine...)
	counts := map[string]int{}
	for _, v := range all {
		counts[v.Rule]++
	}
	s.mu.Lock()
	kills := s.kills
	s.mu.Unlock()
	r.tools.mu.Lock()
	unheld := len(r.holdOnce)
	r.tools.mu.Unlock()
	t.Logf("chaos r7: seed=%d conversations=%d turns=%d succeeded=%d model-retries-exhausted=%d kills=%d "+
		"(aimed at a held tool call %d — %d of %d held calls in flight at a kill; of the %d chosen calls %d reached no hold, their manager killed in the call first, and %d were never sent; "+
		"between turns %d, of which %d before the next turn's claim; at random %d) "+
		"effects=%d duplicates=%d stuck=%d lost=%d out-of-order=%d history-checked=%d history-missing=%d violations=%d",
		seed(), len(r.order), st.Turns, st.Succeeded, st.Exhausted, kills,
		r.inToolKills, r.callsKilled, r.heldCalls, r.chosen, r.chosen-r.heldCalls-unheld, unheld, r.betweenKills, r.betweenHits, r.random,
		st.Effects, counts[RuleDuplicateEffect], counts[RuleNonTerminal], counts[RuleTurnLost], counts[RuleTurnOrder],
		st.HistoryChecked, counts[RuleTurnHistory], len(all))
	if r.callsKilled == 0 {
		t.Errorf("seed %d: no manager was killed with a tool call in flight (%d calls held)", seed(), r.heldCalls)
	}
	if r.betweenHits == 0 && len(r.between) > 0 {
		t.Errorf("seed %d: no kill landed between a turn's outcome and the next turn's claim (%d tried)", seed(), r.betweenKills)
	}
	s.verify(mine...)
}

func turnIndex(run string) int {
	_, k, _ := strings.Cut(run, "-t")
	n, _ := strconv.Atoi(k)
	return n
}

func turnCallID(k int) string { return fmt.Sprintf("pay-t%d", k) }

func turnTool(k int) string {
	if k%2 == 1 {
		return toolCharge
	}
	return toolRefund
}

func turnAnswer(run string) string { return "done " + run }

// convRun is R7's state beside its scenario.
type convRun struct {
	*scenario
	convs Conversations
	order []string
	// chatty conversations say a turn only once the one before ended.
	chatty map[string]bool
	// between is the turn of each conversation after which every manager
	// is killed.
	between map[string]int
	// holdOnce are the turns whose tool request is held (once) for a kill;
	// only the tool server's hold condition touches it, under its lock.
	holdOnce map[string]bool
	pool     *managerPool

	// Kills by where they were aimed; only the killer writes them until it
	// returns.
	chosen, heldCalls, callsKilled, inToolKills, betweenKills, betweenHits, random int
}

// betweenKill asks the killer to kill every manager now that turn (the
// k-th of conv) ended; done is closed once they are dead.
type betweenKill struct {
	conv string
	k    int
	done chan struct{}
}

// say creates conv's turns: all at once (in order) for a queued
// conversation; for a chatty one each after the one before ended, and —
// after the chosen turn — only once the killer killed every manager.
func (r *convRun) say(ctx context.Context, conv string, between chan<- betweenKill, deadline time.Duration) error {
	for k, turn := range r.convs[conv] {
		run := r.runObject(turn.Name, convAgent)
		run.Spec.ConversationRef = &exagentv1.ConversationRef{Name: conv}
		if _, err := r.createAs(r.cl.users[bob], run); err != nil {
			return err
		}
		if !r.chatty[conv] {
			continue
		}
		if last, ok := r.await(turn.Name, deadline, func(run *exagentv1.AgentRun) bool { return turnEnded(&run.Status) }); !ok {
			return fmt.Errorf("turn %s of conversation %s did not end within %s: %s", turn.Name, conv, deadline, describeRun(last))
		}
		if r.between[conv] == k+1 {
			ev := betweenKill{conv: conv, k: k + 1, done: make(chan struct{})}
			select {
			case between <- ev:
			case <-ctx.Done():
				return nil
			}
			select {
			case <-ev.done:
			case <-ctx.Done():
				return nil
			}
		}
	}
	return nil
}

// watchEnds asks for the between-turns kill of each queued conversation
// as soon as the recorder shows its chosen turn ended.
func (r *convRun) watchEnds(ctx context.Context, between chan<- betweenKill) {
	pending := map[string]int{}
	for c, k := range r.between {
		if !r.chatty[c] {
			pending[c] = k
		}
	}
	for len(pending) > 0 && ctx.Err() == nil {
		changed := r.rec.Changed()
		for c, k := range pending {
			if run := r.rec.Latest(fmt.Sprintf("%s-t%d", c, k)); run != nil && turnEnded(&run.Status) {
				select {
				case between <- betweenKill{conv: c, k: k, done: make(chan struct{})}:
				case <-ctx.Done():
					return
				}
				delete(pending, c)
			}
		}
		select {
		case <-ctx.Done():
		case <-changed:
		case <-time.After(time.Second):
		}
	}
}

// killer kills managers until ctx ends: the holder of each held tool
// request, every manager at each between-turns request, and one at
// random every 1.5–4.5 s for killFor. A killed manager starts again
// after 0.2–1.7 s.
func (r *convRun) killer(ctx context.Context, between <-chan betweenKill, rng *rand.Rand, killFor time.Duration) {
	down := func() time.Duration { return time.Duration(200+rng.IntN(1500)) * time.Millisecond }
	wait := func() time.Duration { return time.Duration(1500+rng.IntN(3000)) * time.Millisecond }
	randomUntil := time.Now().Add(killFor)
	next := time.NewTimer(wait())
	defer next.Stop()
	for {
		// A held call first: the kill aimed at it lands while it is held.
		select {
		case q := <-r.tools.Held():
			r.killHolder(ctx, q, down())
			continue
		default:
		}
		select {
		case <-ctx.Done():
			return
		case q := <-r.tools.Held():
			r.killHolder(ctx, q, down())
		case ev := <-between:
			r.killAll(ctx, ev, down())
		case <-next.C:
			if time.Now().Before(randomUntil) {
				if i := r.pool.randomLive(rng); i >= 0 && r.pool.kill(i) {
					r.random++
					r.counted()
					r.pool.restartLater(i, down())
				}
			}
			next.Reset(wait())
		}
	}
}

func (r *convRun) counted() {
	r.mu.Lock()
	r.kills++
	r.mu.Unlock()
}

// killHolder kills the manager whose claim sent the held request q: its
// connection closes, and with it the held call. The sender is the claim
// of the attempt that started the call; when another attempt holds the
// run by now, or the sender is no longer running, an earlier kill (or
// between-turns kill) got it while the call was held.
func (r *convRun) killHolder(ctx context.Context, q Request, down time.Duration) {
	r.heldCalls++
	run := &exagentv1.AgentRun{}
	if err := r.cl.c.Get(ctx, q.Run, run); err != nil {
		// Unknown: every manager goes, the sender among them.
		for _, i := range r.pool.killLive() {
			r.counted()
			r.pool.restartLater(i, down)
		}
		r.inToolKills++
		r.callsKilled++
		return
	}
	holder := ""
	if c, call := run.Status.Claim, run.Status.Call(q.CallID); c != nil && call != nil && call.Attempt == c.Attempt {
		holder = c.Holder
	}
	r.callsKilled++
	i := r.pool.slotOf(holder)
	if holder == "" || i < 0 || !r.pool.kill(i) {
		r.t.Logf("chaos r7: the manager that sent %s's call %s had been killed already, the call held", q.Run.Name, q.CallID)
		return
	}
	r.inToolKills++
	r.counted()
	r.pool.restartLater(i, down)
}

// killAll kills every manager after ev's turn ended, and counts the kill
// as landed between turns when the next turn, read past any cache, had
// not been continued or claimed yet.
func (r *convRun) killAll(ctx context.Context, ev betweenKill, down time.Duration) {
	killed := r.pool.killLive()
	for range killed {
		r.counted()
	}
	r.betweenKills++
	next := &exagentv1.AgentRun{}
	err := r.cl.c.Get(ctx, types.NamespacedName{Namespace: r.ns, Name: fmt.Sprintf("%s-t%d", ev.conv, ev.k+1)}, next)
	if apierrors.IsNotFound(err) || (err == nil && next.Status.Turn == nil && next.Status.Attempts == 0) {
		r.betweenHits++
	}
	close(ev.done)
	for _, i := range killed {
		r.pool.restartLater(i, down)
	}
}

// checkStatuses waits until each Conversation's status lists its turns,
// in order, each in the phase its run ended in, and the conversation is
// Idle; a conversation that does not get there is a violation.
func (r *convRun) checkStatuses(timeout time.Duration) []Violation {
	var out []Violation
	for _, c := range r.order {
		conv := &exagentv1.Conversation{}
		why := ""
		err := procs.Poll(timeout, func() (bool, error) {
			if err := r.cl.c.Get(context.Background(), types.NamespacedName{Namespace: r.ns, Name: c}, conv); err != nil {
				why = err.Error()
				return false, nil
			}
			why = r.statusMismatch(c, &conv.Status)
			return why == "", nil
		})
		if err != nil {
			out = append(out, Violation{Rule: RuleConvStatus, Run: c, Detail: fmt.Sprintf(
				"conversation %s: its status did not list its turns as they ended within %s: %s (phase %s, open %q, queued %d)",
				c, timeout, why, conv.Status.Phase, conv.Status.Open, conv.Status.Queued)})
		}
	}
	return out
}

func (r *convRun) statusMismatch(c string, st *exagentv1.ConversationStatus) string {
	turns := r.convs[c]
	if len(st.Turns) != len(turns) {
		return fmt.Sprintf("%d turns listed, want %d", len(st.Turns), len(turns))
	}
	for k, t := range turns {
		got := st.Turns[k]
		run := r.rec.Latest(t.Name)
		if run == nil {
			return "turn " + t.Name + " was never recorded"
		}
		if got.Run != t.Name || got.Index != int32(k+1) || got.Phase != run.Status.Phase {
			return fmt.Sprintf("turns[%d] is %+v, want run %s, index %d, phase %s", k, got, t.Name, k+1, run.Status.Phase)
		}
	}
	if st.Phase != exagentv1.ConversationIdle || st.Open != "" || st.Queued != 0 {
		return "not Idle"
	}
	return ""
}

// managerPool is R7's (and R8's) manager processes, each in a slot that
// is empty while its process is down.
type managerPool struct {
	cl   *cluster
	name string
	// opts, when set, are how slot i's manager starts (R8: its trigger
	// listener's port, its failpoints); ready, when set, is what start
	// waits for besides the manager's workers.
	opts  func(i int) managerOpts
	ready func(i int) error

	// startMu orders starts: a holder identity is read from the cluster's
	// count of managers started.
	startMu sync.Mutex
	mu      sync.Mutex
	procs   []*procs.Process
	holders []string
	// upSince is when each running slot's manager was ready; spans are
	// the times managers were up and have been killed since.
	upSince []time.Time
	spans   []upSpan
	// stopping: restarts scheduled before the end start nothing; stop
	// ends their down time.
	stopping bool
	stop     chan struct{}
	restarts sync.WaitGroup
	err      error
}

// start starts the manager of slot i.
func (p *managerPool) start(i int) error {
	p.startMu.Lock()
	defer p.startMu.Unlock()
	p.mu.Lock()
	stopping := p.stopping
	running := p.procs[i] != nil
	p.mu.Unlock()
	if stopping || running {
		return nil
	}
	name := fmt.Sprintf("%s-%d", p.name, i)
	opts := managerOpts{name: name}
	if p.opts != nil {
		opts = p.opts(i)
	}
	proc, err := p.cl.startManager(opts)
	if err != nil {
		return err
	}
	if p.ready != nil {
		if err := p.ready(i); err != nil {
			proc.Kill()
			return err
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopping {
		proc.Kill()
		return nil
	}
	p.procs[i], p.holders[i] = proc, fmt.Sprintf("%s-%d", opts.name, p.cl.managers)
	if p.upSince != nil {
		p.upSince[i] = time.Now()
	}
	return nil
}

// upSpan is a time a manager was up: from ready to killed.
type upSpan struct {
	slot     int
	from, to time.Time
}

// down records that slot i's manager stopped now (p.mu held).
func (p *managerPool) down(i int) {
	if p.upSince != nil && !p.upSince[i].IsZero() {
		p.spans = append(p.spans, upSpan{slot: i, from: p.upSince[i], to: time.Now()})
		p.upSince[i] = time.Time{}
	}
}

// kill SIGKILLs slot i's manager; false if the slot was empty.
func (p *managerPool) kill(i int) bool {
	p.mu.Lock()
	proc := p.procs[i]
	p.procs[i], p.holders[i] = nil, ""
	p.down(i)
	p.mu.Unlock()
	if proc == nil {
		return false
	}
	proc.Kill()
	return true
}

// killLive kills every running manager at once and returns their slots.
func (p *managerPool) killLive() []int {
	p.mu.Lock()
	var slots []int
	var live []*procs.Process
	for i, proc := range p.procs {
		if proc != nil {
			slots, live = append(slots, i), append(live, proc)
			p.procs[i], p.holders[i] = nil, ""
			p.down(i)
		}
	}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, proc := range live {
		wg.Go(proc.Kill)
	}
	wg.Wait()
	return slots
}

// slotOf is the slot whose running manager has holder identity holder (-1: none).
func (p *managerPool) slotOf(holder string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, h := range p.holders {
		if h == holder && p.procs[i] != nil {
			return i
		}
	}
	return -1
}

// randomLive is a running manager's slot, at random (-1: none runs).
func (p *managerPool) randomLive(rng *rand.Rand) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var live []int
	for i, proc := range p.procs {
		if proc != nil {
			live = append(live, i)
		}
	}
	if len(live) == 0 {
		return -1
	}
	return live[rng.IntN(len(live))]
}

// restartLater starts slot i's manager again after down.
func (p *managerPool) restartLater(i int, down time.Duration) {
	p.restarts.Add(1)
	go func() {
		defer p.restarts.Done()
		select { // the slot stays down for a while: a schedule, not a wait for anything
		case <-p.stop:
			return
		case <-time.After(down):
		}
		if err := p.start(i); err != nil {
			p.mu.Lock()
			if p.err == nil {
				p.err = err
			}
			p.mu.Unlock()
		}
	}()
}

// settle waits for the scheduled restarts and starts any slot still
// empty, so that the conversations' statuses can be brought up to date.
func (p *managerPool) settle() error {
	p.restarts.Wait()
	p.mu.Lock()
	err := p.err
	var empty []int
	for i, proc := range p.procs {
		if proc == nil {
			empty = append(empty, i)
		}
	}
	p.mu.Unlock()
	if err != nil {
		return err
	}
	for _, i := range empty {
		if err := p.start(i); err != nil {
			return err
		}
	}
	return nil
}

// stopAll kills every manager and starts none again.
func (p *managerPool) stopAll() {
	p.mu.Lock()
	if !p.stopping {
		p.stopping = true
		close(p.stop)
	}
	p.mu.Unlock()
	p.restarts.Wait()
	p.killLive()
}

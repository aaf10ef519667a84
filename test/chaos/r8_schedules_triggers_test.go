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
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/schedule"
	"github.com/exagent-io/exagent/internal/testing/procs"
)

// R8's objects and bounds.
const (
	r8Managers = 3
	r8Agent    = "instant"
	r8Schedule = "every-minute"
	r8Trigger  = "burst"
	r8Token    = "chaos-r8-token"
	// r8Deadline is the schedule's startingDeadlineSeconds.
	r8Deadline = 30 * time.Second
	// r8Covered is how long a manager must have been up inside a tick's
	// starting deadline for the tick to be owed its run.
	r8Covered = 5 * time.Second
	// r8Window is the trigger's dedupWindow.
	r8Window = 168 * time.Hour
)

// Kinds of kill aimed at a tick.
const (
	// tickInside: every manager is started with a failpoint on the
	// schedule namespace's AgentRun creation (the Create is forwarded, its
	// answer held) and SIGKILLed when it reaches it: the tick's run
	// exists, the tick is not in the schedule's status.
	tickInside = "inside"
	// tickAcross: every manager is killed 3 s before the tick and started
	// again within the starting deadline.
	tickAcross = "across"
	// tickOne: one manager is killed within 400 ms of the tick, the others
	// stay up.
	tickOne = "one"
)

// testSchedulesAndTriggers (R8, issue 40): three manager processes with
// no leader election, each serving the trigger listener on its own
// 127.0.0.1 port, SIGKILLed and started again
//
//   - during a trigger burst: senders post events over a set of dedup keys,
//     each to a random live manager, and retry on another one after a
//     connection error or a 5xx, as Alertmanager would, while a manager
//     is killed at random every 0.5–2 s;
//   - around the ticks of an every-minute schedule (Allow, a Scripted
//     Agent whose runs end at once, startingDeadlineSeconds 30): inside
//     the tick (between its run's Create and the status write), across it
//     (all down at the tick, back within the deadline), or one of them at
//     the tick.
//
// The schedule runs in the managers on their real clock: cmd/manager has
// no clock flag, and driving the controller in-process with a fake clock
// would kill a context, not a process. Oracle: exactly one run per dedup
// key (by the key in the run's input), every key that was answered 2xx
// names that run, every key has its run once the senders' retries end; at
// most one run per tick (by name and by count per scheduled time), and no
// tick lost while a manager was up inside its starting deadline.
func testSchedulesAndTriggers(t *testing.T) {
	cl := sharedCluster(t)
	sz := sizes()
	s := newScenario(t, cl, "r8", func(types.NamespacedName, int32) Turn { return Turn{Text: "done"} })
	ctx := context.Background()
	r := &r8Run{scenario: s, schedNS: s.ns + "-s", ports: make([]int, r8Managers), armed: make([]bool, r8Managers),
		answered: map[string][]string{}, tickKinds: map[time.Time]string{}}
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.schedNS}},
		r8Scripted(s.ns), r8Scripted(r.schedNS),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "trigger-token", Namespace: s.ns}, StringData: map[string]string{"token": r8Token}},
	} {
		if err := cl.c.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	// Created as the cluster's admin: admission stamps and seals the setter.
	trig := &exagentv1.AgentTrigger{ObjectMeta: metav1.ObjectMeta{Name: r8Trigger, Namespace: s.ns}, Spec: exagentv1.AgentTriggerSpec{
		Source: &exagentv1.TriggerSource{Webhook: &exagentv1.WebhookTriggerSource{Auth: &exagentv1.TriggerAuth{
			BearerTokenSecretRef: &exagentv1.SecretKeySelector{Name: "trigger-token", Key: "token"}}}},
		RunTemplate: exagentv1.ScheduleRunTemplate{AgentRef: exagentv1.LocalObjectReference{Name: r8Agent}, Input: "Look at this:",
			LeaseDuration: leaseDuration},
		Input:    `"key " + event.key`,
		DedupKey: "event.key",
		// One window for the whole burst (the longest admitted; windows are
		// aligned on the epoch: they end Thursdays at 00:00 UTC).
		DedupWindow: &metav1.Duration{Duration: r8Window},
	}}
	if err := cl.c.Create(ctx, trig); err != nil {
		t.Fatalf("creating trigger: %v", err)
	}

	certDir := filepath.Join(cl.dir, "webhook")
	for i := range r.ports {
		port, err := procs.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		r.ports[i] = port
	}
	r.pool = &managerPool{cl: cl, name: "r8", procs: make([]*procs.Process, r8Managers), holders: make([]string, r8Managers),
		upSince: make([]time.Time, r8Managers), stop: make(chan struct{}),
		opts: func(i int) managerOpts {
			o := managerOpts{name: fmt.Sprintf("r8-%d", i), args: []string{
				"--trigger-bind-address", net.JoinHostPort("127.0.0.1", strconv.Itoa(r.ports[i])), "--trigger-cert-dir", certDir}}
			r.mu.Lock()
			if r.armed[i] {
				o.failpoints = "builtin-response=block@" + r.runsPath()
			}
			r.mu.Unlock()
			return o
		},
		ready: func(i int) error {
			addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(r.ports[i]))
			return procs.Poll(time.Minute, func() (bool, error) { return procs.Dial(addr), nil })
		}}
	for i := range r8Managers {
		if err := r.pool.start(i); err != nil {
			t.Fatal(err)
		}
	}
	defer r.pool.stopAll()
	var err error
	if r.client, err = triggerClient(filepath.Join(certDir, "ca.crt")); err != nil {
		t.Fatal(err)
	}

	sched := &exagentv1.AgentSchedule{ObjectMeta: metav1.ObjectMeta{Name: r8Schedule, Namespace: r.schedNS}, Spec: exagentv1.AgentScheduleSpec{
		Schedule: "* * * * *", ConcurrencyPolicy: exagentv1.ConcurrencyAllow, StartingDeadlineSeconds: ptr.To(int64(r8Deadline / time.Second)),
		// Nothing is pruned: every run of every tick is counted.
		SuccessfulRunsHistoryLimit: ptr.To[int32](1000), FailedRunsHistoryLimit: ptr.To[int32](1000),
		RunTemplate: exagentv1.ScheduleRunTemplate{AgentRef: exagentv1.LocalObjectReference{Name: r8Agent}, Input: "Tick.",
			LeaseDuration: leaseDuration},
	}}
	if err := cl.c.Create(ctx, sched); err != nil {
		t.Fatalf("creating schedule: %v", err)
	}
	t.Cleanup(func() { r.suspend() })
	cron, err := schedule.Parse(sched.Spec.Schedule, "")
	if err != nil {
		t.Fatal(err)
	}
	// The burst, one manager killed at random every 0.5–2 s while it lasts.
	rng := rand.New(rand.NewPCG(uint64(seed()), 8))
	burstDone := make(chan struct{})
	killerDone := make(chan struct{})
	go func() {
		defer close(killerDone)
		r.randomKills(burstDone, rng)
	}()
	burstFrom := time.Now()
	r.burst(sz, rand.New(rand.NewPCG(uint64(seed()), 9)))
	close(burstDone)
	<-killerDone
	if w := int64(r8Window / time.Second); burstFrom.Unix()/w != time.Now().Unix()/w {
		t.Logf("chaos r8: the burst straddled the end of a dedup window: a key may have a run in each")
	}
	burstFor := time.Since(burstFrom)

	// Then the planned ticks: the first far enough ahead to start armed
	// managers before it, then one a minute, each with its kind of kill.
	// Every tick from the schedule's first to the last planned one is
	// checked (those during the burst met its random kills).
	first := cron.Next(sched.CreationTimestamp.Time)
	planned := cron.Next(time.Now().Add(25 * time.Second))
	kinds := []string{tickInside, tickAcross, tickOne}
	rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	if sz.ticks == 1 {
		kinds = []string{tickInside}
	}
	for k := range sz.ticks {
		r.plans = append(r.plans, tickPlan{at: planned, kind: kinds[k%len(kinds)]})
		planned = cron.Next(planned)
	}
	last := r.plans[len(r.plans)-1].at
	for tick := first; !tick.After(last); tick = cron.Next(tick) {
		r.ticks = append(r.ticks, tick)
	}
	for _, p := range r.plans {
		r.aim(p, rng)
	}
	if err := r.pool.settle(); err != nil {
		t.Fatalf("seed %d: restarting a manager: %v", seed(), err)
	}

	// Every tick owed a run has it once its deadline passed (or sooner).
	_ = procs.Poll(time.Until(last.Add(r8Deadline+15*time.Second)), func() (bool, error) {
		runs, err := r.scheduleRuns()
		if err != nil {
			return false, nil
		}
		for _, tick := range r.ticks {
			if len(runs[tick]) == 0 && r.covered(tick) {
				return false, nil
			}
		}
		return true, nil
	})
	stuck := r.waitEnded(2 * time.Minute)
	v := r.check()
	summary := fmt.Sprintf("chaos r8: seed=%d ticks=%d runs-per-tick-max=%d kills=%d trigger-events=%d keys=%d runs=%d duplicates-made=%d lost=%d",
		seed(), len(r.ticks), v.perTickMax, r.kills, sz.triggerEvents, sz.triggerKeys, v.runs, v.duplicates, v.lost)
	t.Logf("%s (kills at ticks: inside %d — %d between the tick's run Create and its status write —, across %d, one %d; at random during the burst %d; "+
		"ticks not covered by a manager %d; burst %s, deliveries %d, retried %d, answered 201 %d, 200 %d; stuck runs %d)",
		summary, r.insideKills, r.insideHits, r.acrossKills, r.oneKills, r.randKills, v.uncovered,
		burstFor.Round(100*time.Millisecond), r.deliveries, r.retries, r.created, r.ok, stuck)
	for _, e := range first8(v.problems) {
		t.Errorf("seed %d: %s", seed(), e)
	}
	if len(v.problems) > 0 || v.duplicates > 0 || v.lost > 0 || stuck > 0 {
		t.Errorf("%s: %d problems (replay: make chaos SEED=%d)", summary, len(v.problems), seed())
	}
	if r.insideHits == 0 && r.insideKills > 0 {
		t.Logf("chaos r8: no kill landed between a tick's run Create and its status write (%d aimed)", r.insideKills)
	}
}

func first8(xs []string) []string { return first(xs, 8) }

// r8Scripted is R8's Agent in ns: one scripted answer, so a run ends at
// its first model request.
func r8Scripted(ns string) *exagentv1.Agent {
	return &exagentv1.Agent{ObjectMeta: metav1.ObjectMeta{Name: r8Agent, Namespace: ns}, Spec: exagentv1.AgentSpec{
		Instructions: "You end at once.",
		Model:        exagentv1.ModelSpec{Provider: exagentv1.ModelProviderScripted, Script: []exagentv1.ScriptTurn{{Text: "done"}}},
	}}
}

// tickPlan is the kill aimed at one tick.
type tickPlan struct {
	at   time.Time
	kind string
}

// r8Run is R8's state beside its scenario.
type r8Run struct {
	*scenario
	schedNS string
	pool    *managerPool
	ports   []int
	client  *triggerHTTP
	plans   []tickPlan
	// ticks are every tick checked: from the schedule's first to the last
	// planned one.
	ticks []time.Time

	mu        sync.Mutex
	armed     []bool
	tickKinds map[time.Time]string
	// answered: the runs each key's 2xx answers named.
	answered map[string][]string
	// Counts; the kills' are written by one goroutine at a time.
	kills, insideKills, insideHits, acrossKills, oneKills, randKills int
	deliveries, retries, created, ok, failed                         int
}

// runsPath is the URL path of AgentRun creation in the schedule's namespace.
func (r *r8Run) runsPath() string { return "/namespaces/" + r.schedNS + "/agentruns" }

func (r *r8Run) suspend() {
	ctx := context.Background()
	sched := &exagentv1.AgentSchedule{}
	if err := r.cl.c.Get(ctx, types.NamespacedName{Namespace: r.schedNS, Name: r8Schedule}, sched); err != nil {
		return
	}
	sched.Spec.Suspend = ptr.To(true)
	_ = r.cl.c.Update(ctx, sched)
}

// randomKills kills one manager at a time, at random, every 0.5–2 s
// until done is closed; each starts again after 0.2–1 s.
func (r *r8Run) randomKills(done <-chan struct{}, rng *rand.Rand) {
	for {
		wait := time.Duration(500+rng.IntN(1500)) * time.Millisecond
		down := time.Duration(200+rng.IntN(800)) * time.Millisecond
		select {
		case <-done:
			return
		case <-time.After(wait):
		}
		if i := r.pool.randomLive(rng); i >= 0 && r.pool.kill(i) {
			r.kills++
			r.randKills++
			time.Sleep(down) // the manager's down time: a schedule, not a wait for anything
			if err := r.pool.start(i); err != nil {
				r.fail(err)
			}
		}
	}
}

// waitUntil waits until at (zero: not at all): the kills' timing.
func waitUntil(at time.Time) {
	if d := time.Until(at); !at.IsZero() && d > 0 {
		time.Sleep(d)
	}
}

func (r *r8Run) fail(err error) {
	r.pool.mu.Lock()
	if r.pool.err == nil {
		r.pool.err = err
	}
	r.pool.mu.Unlock()
}

// aim carries out p at its tick.
func (r *r8Run) aim(p tickPlan, rng *rand.Rand) {
	r.mu.Lock()
	r.tickKinds[p.at] = p.kind
	r.mu.Unlock()
	switch p.kind {
	case tickInside:
		// Every manager again, armed, some 20 s before the tick.
		waitUntil(p.at.Add(-22 * time.Second))
		r.restartAll(func() {
			r.mu.Lock()
			for i := range r.armed {
				r.armed[i] = true
			}
			r.mu.Unlock()
		})
		// Each is killed as it reaches the failpoint, and started again
		// unarmed after 0.2–2 s; one that never reached it by the deadline
		// is started again unarmed too.
		var wg sync.WaitGroup
		for i := range r8Managers {
			down := time.Duration(200+rng.IntN(1800)) * time.Millisecond
			wg.Go(func() { r.killAtFailpoint(i, p.at, down) })
		}
		wg.Wait()
	case tickAcross:
		waitUntil(p.at.Add(-3 * time.Second))
		for range r.pool.killLive() {
			r.kills++
			r.acrossKills++
		}
		waitUntil(p.at.Add(time.Duration(3000+rng.IntN(int(r8Deadline/time.Millisecond)-15000)) * time.Millisecond))
		r.startAll()
	case tickOne:
		waitUntil(p.at.Add(time.Duration(rng.IntN(400)) * time.Millisecond))
		if i := r.pool.randomLive(rng); i >= 0 && r.pool.kill(i) {
			r.kills++
			r.oneKills++
			time.Sleep(time.Duration(200+rng.IntN(1300)) * time.Millisecond) // down time
			if err := r.pool.start(i); err != nil {
				r.fail(err)
			}
		}
	}
}

// restartAll kills every manager, calls between, and starts them all.
func (r *r8Run) restartAll(between func()) {
	for range r.pool.killLive() {
		r.kills++
	}
	between()
	r.startAll()
}

func (r *r8Run) startAll() {
	for i := range r8Managers {
		if err := r.pool.start(i); err != nil {
			r.fail(err)
		}
	}
}

// killAtFailpoint kills slot i's armed manager when its log shows the
// failpoint reached (or, unreached, once tick's deadline passed), counts
// whether the kill landed inside the tick — its run created, the tick not
// in the schedule's status — and starts it again unarmed after down.
func (r *r8Run) killAtFailpoint(i int, tick time.Time, down time.Duration) {
	r.pool.mu.Lock()
	proc := r.pool.procs[i]
	r.pool.mu.Unlock()
	if proc == nil {
		return
	}
	reached := procs.Poll(time.Until(tick.Add(r8Deadline)), func() (bool, error) {
		return proc.LogContains("failpoint reached", r.runsPath()), nil
	}) == nil
	inside := false
	if reached {
		sched := &exagentv1.AgentSchedule{}
		run := &exagentv1.AgentRun{}
		ctx := context.Background()
		if r.cl.c.Get(ctx, types.NamespacedName{Namespace: r.schedNS, Name: r8Schedule}, sched) == nil &&
			r.cl.c.Get(ctx, types.NamespacedName{Namespace: r.schedNS, Name: schedule.RunName(r8Schedule, tick)}, run) == nil {
			inside = sched.Status.LastScheduleTime == nil || sched.Status.LastScheduleTime.Time.Before(tick)
		}
	}
	killed := r.pool.kill(i)
	r.mu.Lock()
	r.armed[i] = false
	if killed {
		r.kills++
		if reached {
			r.insideKills++
		}
		if inside {
			r.insideHits++
		}
	}
	r.mu.Unlock()
	if !reached {
		r.t.Logf("chaos r8: manager %d did not reach its failpoint by the tick's deadline", i)
	}
	time.Sleep(down) // down time
	if err := r.pool.start(i); err != nil {
		r.fail(err)
	}
}

// covered says whether some manager was up for r8Covered inside tick's
// starting deadline: the tick is owed its run.
func (r *r8Run) covered(tick time.Time) bool {
	end := tick.Add(r8Deadline)
	r.pool.mu.Lock()
	defer r.pool.mu.Unlock()
	spans := append([]upSpan(nil), r.pool.spans...)
	for i, since := range r.pool.upSince {
		if !since.IsZero() {
			spans = append(spans, upSpan{slot: i, from: since, to: time.Now()})
		}
	}
	for _, s := range spans {
		from, to := s.from, s.to
		if from.Before(tick) {
			from = tick
		}
		if to.After(end) {
			to = end
		}
		if to.Sub(from) >= r8Covered {
			return true
		}
	}
	return false
}

// scheduleRuns are the schedule's runs by the tick they were made for.
func (r *r8Run) scheduleRuns() (map[time.Time][]exagentv1.AgentRun, error) {
	list := &exagentv1.AgentRunList{}
	if err := r.cl.c.List(context.Background(), list, client.InNamespace(r.schedNS),
		client.MatchingLabels{exagentv1.LabelSchedule: r8Schedule}); err != nil {
		return nil, err
	}
	out := map[time.Time][]exagentv1.AgentRun{}
	for _, run := range list.Items {
		at, _ := time.Parse(time.RFC3339, run.Annotations[exagentv1.AnnotationScheduledTime])
		out[at.UTC()] = append(out[at.UTC()], run)
	}
	return out, nil
}

// triggerRuns are the trigger's runs by dedup key (read from the input).
func (r *r8Run) triggerRuns() (map[string][]exagentv1.AgentRun, error) {
	list := &exagentv1.AgentRunList{}
	if err := r.cl.c.List(context.Background(), list, client.InNamespace(r.ns),
		client.MatchingLabels{exagentv1.LabelTrigger: r8Trigger}); err != nil {
		return nil, err
	}
	out := map[string][]exagentv1.AgentRun{}
	for _, run := range list.Items {
		_, key, _ := strings.Cut(run.Spec.Input, "\n\nkey ")
		out[key] = append(out[key], run)
	}
	return out, nil
}

// waitEnded waits until every run of both namespaces ended and returns
// how many did not.
func (r *r8Run) waitEnded(timeout time.Duration) int {
	open := 0
	_ = procs.Poll(timeout, func() (bool, error) {
		open = 0
		for _, ns := range []string{r.ns, r.schedNS} {
			list := &exagentv1.AgentRunList{}
			if err := r.cl.c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
				open = -1
				return false, nil
			}
			for _, run := range list.Items {
				if !run.Status.Phase.IsTerminal() {
					open++
				}
			}
		}
		return open == 0, nil
	})
	return max(open, 0)
}

// r8Verdict is what the oracle found.
type r8Verdict struct {
	perTickMax, runs, duplicates, lost, uncovered int
	problems                                      []string
}

func (r *r8Run) check() r8Verdict {
	var v r8Verdict
	byTick, err := r.scheduleRuns()
	if err != nil {
		v.problems = append(v.problems, "listing the schedule's runs: "+err.Error())
		return v
	}
	checked := map[time.Time]bool{}
	for _, tick := range r.ticks {
		checked[tick.UTC()] = true
	}
	for tick, runs := range byTick {
		v.runs += len(runs)
		v.perTickMax = max(v.perTickMax, len(runs))
		if len(runs) > 1 {
			v.duplicates += len(runs) - 1
			v.problems = append(v.problems, fmt.Sprintf("tick %s has %d runs", stamp(tick), len(runs)))
		}
		for _, run := range runs {
			if want := schedule.RunName(r8Schedule, tick); run.Name != want {
				v.problems = append(v.problems, fmt.Sprintf("run %s is of tick %s, whose run is named %s", run.Name, stamp(tick), want))
			}
		}
	}
	for _, tick := range r.ticks {
		if len(byTick[tick.UTC()]) > 0 {
			continue
		}
		r.mu.Lock()
		kind := r.tickKinds[tick]
		r.mu.Unlock()
		if !r.covered(tick) {
			v.uncovered++
			r.t.Logf("chaos r8: tick %s (kill %q) has no run, and no manager was up %s inside its deadline", stamp(tick), kind, r8Covered)
			continue
		}
		v.lost++
		v.problems = append(v.problems, fmt.Sprintf("tick %s (kill %q) has no run though a manager was up inside its starting deadline", stamp(tick), kind))
	}

	byKey, err := r.triggerRuns()
	if err != nil {
		v.problems = append(v.problems, "listing the trigger's runs: "+err.Error())
		return v
	}
	sz := sizes()
	for k := range sz.triggerKeys {
		key := r8Key(k)
		runs := byKey[key]
		delete(byKey, key)
		v.runs += len(runs)
		switch {
		case len(runs) == 0:
			v.lost++
			v.problems = append(v.problems, fmt.Sprintf("key %s has no run (its 2xx answers named %v)", key, r.answered[key]))
			continue
		case len(runs) > 1:
			v.duplicates += len(runs) - 1
			var names []string
			for _, run := range runs {
				names = append(names, run.Name)
			}
			v.problems = append(v.problems, fmt.Sprintf("key %s has %d runs: %v", key, len(runs), names))
		}
		for _, name := range r.answered[key] {
			if name != runs[0].Name {
				v.problems = append(v.problems, fmt.Sprintf("key %s: an answer named run %s, its run is %s", key, name, runs[0].Name))
			}
		}
	}
	for key, runs := range byKey {
		v.runs += len(runs)
		v.problems = append(v.problems, fmt.Sprintf("%d runs of no key sent (%q)", len(runs), key))
	}
	r.mu.Lock()
	if r.failed > 0 {
		v.problems = append(v.problems, fmt.Sprintf("%d deliveries were never answered 2xx", r.failed))
	}
	r.mu.Unlock()
	return v
}

func r8Key(k int) string { return fmt.Sprintf("k%03d", k) }

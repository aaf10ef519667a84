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

package loop

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

func TestStart(t *testing.T) {
	env := defaultEnv(t)
	b := env.Binding()
	cases := map[string]struct {
		s        Status
		env      *Env
		want     func(*Status)
		wantKind ErrorKind
	}{
		"new run": {env: env, want: func(s *Status) {
			s.Phase, s.Reason = exagentv1.PhaseQueued, exagentv1.ReasonQueued
			s.Message = "waiting for a worker to claim the run"
			s.Binding = &b
			s.History = []exagentv1.Message{{Role: exagentv1.RoleSystem, Content: "You are helpful."}, {Role: exagentv1.RoleUser, Content: "do the thing"}}
			s.Cursor = exagentv1.Cursor{Stage: exagentv1.StageRequest}
		}},
		"already started": {s: Status{Phase: exagentv1.PhaseQueued}, env: env, wantKind: KindConflict},
		"input over budget": {env: func() *Env {
			e, _ := NewEnv(EnvInput{RunUID: "u", Agent: MakeAgent().Spec(), Run: MakeRun().Spec(), SizeBudget: 300})
			return e
		}(), wantKind: KindTooLarge},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Start(tc.s, tc.env, t0)
			if wantErrKind(t, err, tc.wantKind) {
				return
			}
			want := clone(tc.s)
			tc.want(&want)
			if diff := diffState(want, got); diff != "" {
				t.Errorf("state (-want +got):\n%s", diff)
			}
		})
	}
}

func TestClaim(t *testing.T) {
	env := defaultEnv(t)
	never := mustEnv(t, MakeAgent().HTTPTool("search", false).HTTPTool("pay", false).Rule("search-ok", exagentv1.PolicyAllow, "", "search").Spec(),
		MakeRun().ActiveTimeLimit(exagentv1.Never).Spec())
	drifted := mustEnv(t, MakeAgent().Instructions("changed").HTTPTool("search", false).HTTPTool("pay", false).Spec(), MakeRun().Spec())
	q := queued(t, env)
	now := t0.Add(time.Minute)
	claimed := func(attempt int64, reserved time.Duration) func(*Status) {
		return func(s *Status) {
			s.Phase, s.Reason = exagentv1.PhaseRunning, exagentv1.ReasonRunning
			s.Message = "claimed by w (attempt " + string(rune('0'+attempt)) + ")"
			s.Attempts = attempt
			s.Claim = &exagentv1.Claim{Holder: "w", Attempt: attempt, LeaseExpiresAt: metav1.NewMicroTime(now.Add(30 * time.Second)), ClaimedAt: microTimePtr(now)}
			s.Ledger.ActiveTimeReserved = metav1.Duration{Duration: reserved}
			if s.StartedAt == nil {
				s.StartedAt = secTimePtr(now) // the first claim only (TestStartedAtIsTheFirstClaim)
			}
		}
	}
	cases := map[string]struct {
		s        Status
		env      *Env
		holder   string
		want     func(*Status)
		wantKind ErrorKind
		wantMsg  string
	}{
		"queued": {s: q, env: env, holder: "w", want: claimed(1, time.Hour)},
		"approved": {s: func() Status {
			_, s := paused(t)
			s, _, _ = Approve(s, env, approveCmd(t, s, "p1", "op", "alice"), t0)
			s.Attempts = 0
			return s
		}(),
			env: env, holder: "w", want: claimed(1, time.Hour)},
		"attempts continue after a release": {s: func() Status { s := clone(q); s.Attempts = 3; return s }(), env: env, holder: "w", want: claimed(4, time.Hour)},
		"reserves the remaining balance": {s: func() Status { s := clone(q); s.Ledger.ActiveTimeUsed.Duration = 50 * time.Minute; return s }(),
			env: env, holder: "w", want: claimed(1, 10*time.Minute)},
		"exhausted balance reserves nothing": {s: func() Status { s := clone(q); s.Ledger.ActiveTimeUsed.Duration = 2 * time.Hour; return s }(),
			env: env, holder: "w", want: claimed(1, 0)},
		"never reserves nothing": {s: queued(t, never), env: never, holder: "w", want: claimed(1, 0)},
		"no holder":              {s: q, env: env, wantKind: KindConflict},
		"running with valid lease": {s: func() Status {
			s := running(t, env)
			s.Claim.LeaseExpiresAt = metav1.NewMicroTime(now.Add(time.Hour))
			return s
		}(), env: env, holder: "w", wantKind: KindConflict, wantMsg: "claimed by worker-1"},
		"running with lost lease": {s: func() Status { s := running(t, env); s.Claim.LeaseExpiresAt = metav1.NewMicroTime(t0); return s }(),
			env: env, holder: "w", wantKind: KindConflict, wantMsg: "Recover"},
		"ended":         {s: Status{Phase: exagentv1.PhaseSucceeded}, env: env, holder: "w", wantKind: KindNotPending},
		"never started": {s: Status{}, env: env, holder: "w", wantKind: KindNotPending},
		"awaiting":      {s: func() Status { _, s := paused(t); return s }(), env: env, holder: "w", wantKind: KindNotPending},
		"drift":         {s: q, env: drifted, holder: "w", wantKind: KindInvalidContinuation, wantMsg: "definition"},
		"omitted history": {s: func() Status { s := clone(q); s.History = nil; return s }(), env: env, holder: "w",
			wantKind: KindInvalidContinuation, wantMsg: "history is empty"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, f, err := Claim(tc.s, tc.env, tc.holder, now)
			if wantErrKind(t, err, tc.wantKind) {
				if !strings.Contains(err.Error(), tc.wantMsg) {
					t.Errorf("error %q does not mention %q", err, tc.wantMsg)
				}
				return
			}
			want := clone(tc.s)
			tc.want(&want)
			if want.Limits == nil {
				want.Limits = tc.env.runLimits() // journaled at the first claim (TestLimitsJournaledAtFirstClaim)
			}
			if diff := diffState(want, got); diff != "" {
				t.Errorf("state (-want +got):\n%s", diff)
			}
			if f != (Fence{Holder: "w", Attempt: want.Attempts}) {
				t.Errorf("fence = %+v", f)
			}
		})
	}
}

// fenceCases are the guard cases shared by every owner transition.
func fenceCases(t *testing.T, s Status) map[string]struct {
	s Status
	f Fence
} {
	expired := clone(s)
	expired.Claim.LeaseExpiresAt = metav1.NewMicroTime(t0)
	noClaim := clone(s)
	noClaim.Claim = nil
	paused := clone(s)
	paused.Phase = exagentv1.PhaseAwaitingApproval
	return map[string]struct {
		s Status
		f Fence
	}{
		"other holder":  {s: s, f: Fence{Holder: "intruder", Attempt: 1}},
		"older attempt": {s: s, f: Fence{Holder: w1, Attempt: 0}},
		"lease expired": {s: expired, f: f1},
		"no claim":      {s: noClaim, f: f1},
		"not running":   {s: paused, f: f1},
	}
}

func TestOwnerTransitionsCheckTheFence(t *testing.T) {
	env := defaultEnv(t)
	s := awaitingModel(t, env)
	now := t0.Add(time.Second)
	ops := map[string]func(Status, Fence) error{
		"Checkpoint": func(s Status, f Fence) error { _, err := Checkpoint(s, env, f, now); return err },
		"Release":    func(s Status, f Fence) error { _, err := Release(s, env, f, now); return err },
		"Step":       func(s Status, f Fence) error { _, _, err := Step(s, env, f, now); return err },
		"RecordModelResponse": func(s Status, f Fence) error {
			_, err := RecordModelResponse(s, env, f, text("x"), now)
			return err
		},
		"RecordModelFailure": func(s Status, f Fence) error { _, err := RecordModelFailure(s, env, f, "x", now); return err },
		"RecordOutcome": func(s Status, f Fence) error {
			_, err := RecordOutcome(s, env, f, ToolResult{CallID: "x", Kind: ResultSucceeded}, now)
			return err
		},
		"BeginEffect": func(s Status, f Fence) error { _, err := BeginEffect(s, env, f, nil, now); return err },
		"Pause":       func(s Status, f Fence) error { _, err := Pause(s, env, f, now); return err },
		"Finish":      func(s Status, f Fence) error { _, err := Finish(s, env, f, "x", now); return err },
	}
	for op, fn := range ops {
		for name, tc := range fenceCases(t, s) {
			t.Run(op+"/"+name, func(t *testing.T) {
				before := mustJSON(t, tc.s)
				if err := fn(tc.s, tc.f); !IsKind(err, KindStaleFence) {
					t.Fatalf("error = %v, want StaleFence", err)
				}
				if mustJSON(t, tc.s) != before {
					t.Errorf("input state was mutated")
				}
			})
		}
	}
}

func TestCheckpoint(t *testing.T) {
	env := defaultEnv(t)
	s := running(t, env)
	cases := map[string]struct {
		s        Status
		now      time.Time
		used     time.Duration
		reserved time.Duration
	}{
		"returns the unused part and re-reserves": {s: s, now: t0.Add(10 * time.Second), used: 10 * time.Second, reserved: time.Hour - 10*time.Second},
		"charge capped at the reservation": {s: func() Status { s := clone(s); s.Ledger.ActiveTimeReserved.Duration = 5 * time.Second; return s }(),
			now: t0.Add(10 * time.Second), used: 5 * time.Second, reserved: time.Hour - 5*time.Second},
		"clock behind the claim charges nothing": {s: func() Status { s := clone(s); s.Claim.ClaimedAt = microTimePtr(t0.Add(time.Minute)); return s }(),
			now: t0.Add(10 * time.Second), used: 0, reserved: time.Hour},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Checkpoint(tc.s, env, f1, tc.now)
			if err != nil {
				t.Fatal(err)
			}
			want := clone(tc.s)
			want.Ledger.ActiveTimeUsed.Duration = tc.used
			want.Ledger.ActiveTimeReserved.Duration = tc.reserved
			want.Claim.ClaimedAt = microTimePtr(tc.now)
			if diff := diffState(want, got); diff != "" {
				t.Errorf("state (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRelease(t *testing.T) {
	env := defaultEnv(t)
	now := t0.Add(7 * time.Second)
	released := func(phase exagentv1.RunPhase) func(*Status) {
		return func(s *Status) {
			s.Claim = nil
			s.Phase, s.Reason, s.Message = phase, exagentv1.ReasonReleased, "released by worker-1 (attempt 1)"
			s.Ledger.ActiveTimeUsed.Duration += 7 * time.Second
			s.Ledger.ActiveTimeReserved = metav1.Duration{}
		}
	}
	_, inflight := inFlightRun(t)
	cases := map[string]struct {
		s        Status
		want     func(*Status)
		wantKind ErrorKind
	}{
		"idle":                           {s: running(t, env), want: released(exagentv1.PhaseQueued)},
		"model request is re-sent later": {s: awaitingModel(t, env), want: released(exagentv1.PhaseQueued)},
		"approved call waits as Approved": {s: func() Status {
			_, s := paused(t)
			s, _, _ = Approve(s, env, approveCmd(t, s, "p1", "op", "alice"), t0)
			s, _, _ = Claim(s, env, w1, t0)
			s.Attempts, s.Claim.Attempt = 1, 1
			return s
		}(), want: released(exagentv1.PhaseApproved)},
		"tool in flight": {s: inflight, wantKind: KindConflict},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Release(tc.s, env, f1, now)
			if wantErrKind(t, err, tc.wantKind) {
				return
			}
			want := clone(tc.s)
			tc.want(&want)
			if diff := diffState(want, got); diff != "" {
				t.Errorf("state (-want +got):\n%s", diff)
			}
		})
	}
}

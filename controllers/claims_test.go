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

package controllers

import (
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/loop"
)

func claimedRun(uid types.UID, holder string, attempt int64, lease time.Time) *exagentv1.AgentRun {
	return &exagentv1.AgentRun{
		ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: "ns", UID: uid},
		Status: exagentv1.AgentRunStatus{Phase: exagentv1.PhaseRunning, Attempts: attempt,
			Claim: &exagentv1.Claim{Holder: holder, Attempt: attempt, LeaseExpiresAt: metav1.NewMicroTime(lease)}},
	}
}

func TestClaims(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	key := types.NamespacedName{Namespace: "ns", Name: "r"}
	f1 := loop.Fence{Holder: "me", Attempt: 1}
	margin := 5 * time.Second
	var stale *staleLeaseError
	for name, tc := range map[string]struct {
		then func(c *claims)
		// now is when the job asks, after t0.
		now          time.Duration
		uid          types.UID
		fence        loop.Fence
		wantErr      error // errRunGone, errClaimGone, or nil
		wantStale    bool
		wantCanceled bool
	}{
		"the claim holds with lease to spare": {now: 10 * time.Second, uid: "u1", fence: f1},
		"lease within the margin":             {now: 26 * time.Second, uid: "u1", fence: f1, wantStale: true},
		"a later commit extended the lease": {then: func(c *claims) {
			c.committed(claimedRun("u1", "me", 1, t0.Add(90*time.Second)), "me")
		}, now: 60 * time.Second, uid: "u1", fence: f1},
		"a stale event (an older version) changes nothing": {then: func(c *claims) {
			old := claimedRun("u1", "", 0, t0)
			old.Status.Phase, old.Status.Claim = exagentv1.PhaseQueued, nil
			c.observed(old)
		}, now: time.Second, uid: "u1", fence: f1},
		"another run under the same name (stale event) changes nothing": {then: func(c *claims) {
			c.observed(claimedRun("u0", "other", 3, t0))
		}, now: time.Second, uid: "u1", fence: f1},
		"another process recovered the run": {then: func(c *claims) {
			r := claimedRun("u1", "", 1, t0)
			r.Status.Phase, r.Status.Claim = exagentv1.PhaseUncertain, nil
			c.observed(r)
		}, now: time.Second, uid: "u1", fence: f1, wantErr: errRunGone, wantCanceled: true},
		"another process claimed a later attempt": {then: func(c *claims) {
			c.observed(claimedRun("u1", "other", 2, t0.Add(time.Hour)))
		}, now: time.Second, uid: "u1", fence: f1, wantErr: errRunGone, wantCanceled: true},
		"the run was cancelled: running jobs go on, none starts": {then: func(c *claims) {
			r := claimedRun("u1", "", 1, t0)
			r.Status.Phase, r.Status.Claim = exagentv1.PhaseCancelled, nil
			c.observed(r)
		}, now: time.Second, uid: "u1", fence: f1, wantErr: errClaimGone},
		"the run was deleted": {then: func(c *claims) { c.gone(key, "u1") },
			now: time.Second, uid: "u1", fence: f1, wantErr: errRunGone, wantCanceled: true},
		"the delete of an older run under the name": {then: func(c *claims) { c.gone(key, "u0") },
			now: time.Second, uid: "u1", fence: f1},
		"a job of the run's predecessor": {now: time.Second, uid: "u0", fence: f1, wantErr: errRunGone},
		"a job of an older attempt": {then: func(c *claims) {
			c.committed(claimedRun("u1", "me", 2, t0.Add(30*time.Second)), "me")
		}, now: time.Second, uid: "u1", fence: f1, wantErr: errClaimGone, wantCanceled: true},
	} {
		t.Run(name, func(t *testing.T) {
			c := newClaims()
			c.committed(claimedRun("u1", "me", 1, t0.Add(30*time.Second)), "me")
			ctx := c.context(key, "u1", f1)
			if tc.then != nil {
				tc.then(c)
			}
			err := c.ready(key, tc.uid, tc.fence, t0.Add(tc.now), margin)
			switch {
			case tc.wantStale:
				if !errors.As(err, &stale) {
					t.Errorf("ready = %v, want a stale lease", err)
				}
			case tc.wantErr == nil && err != nil:
				t.Errorf("ready = %v, want nil", err)
			case tc.wantErr != nil && err == nil:
				t.Errorf("ready = nil, want an error")
			}
			if got := ctx.Err() != nil; got != tc.wantCanceled {
				t.Errorf("jobs' context cancelled = %v, want %v", got, tc.wantCanceled)
			}
		})
	}
}

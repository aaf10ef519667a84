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
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/loop"
	"github.com/exagent-io/exagent/store"
)

// TestStoreFence checks the store's owner commits on the real apiserver:
// CAS on the resourceVersion read, the fence checked on the object the
// transition came from, and after a conflict on the fresh object — a lost
// fence (ErrFenceLost, drop everything) told apart from a concurrent write
// that left the claim alone (ErrConflict, re-read and retry).
func TestStoreFence(t *testing.T) {
	a := loop.Fence{Holder: "a", Attempt: 1}
	tests := map[string]struct {
		// interfere changes the stored run after the test read it (nil: nothing).
		interfere func(s *exagentv1.AgentRunStatus)
		// readLease is the lease of the object the commit starts from.
		readLease time.Duration
		fence     *loop.Fence
		wantErr   error
	}{
		"owner commit on the current version": {readLease: time.Minute, fence: &a},
		"a concurrent write that kept the claim is a conflict": {
			readLease: time.Minute, fence: &a, wantErr: store.ErrConflict,
			interfere: func(s *exagentv1.AgentRunStatus) { s.Message = "someone else wrote" },
		},
		"another attempt's claim is a lost fence": {
			readLease: time.Minute, fence: &a, wantErr: store.ErrFenceLost,
			interfere: func(s *exagentv1.AgentRunStatus) { s.Claim.Holder, s.Claim.Attempt = "b", 2 },
		},
		"an expired lease is a lost fence, with no write": {
			readLease: -time.Second, fence: &a, wantErr: store.ErrFenceLost,
		},
		"an unfenced commit on a stale version is a conflict": {
			readLease: time.Minute, wantErr: store.ErrConflict,
			interfere: func(s *exagentv1.AgentRunStatus) { s.Message = "someone else wrote" },
		},
	}
	h := newHarness(t)
	ctx := context.Background()
	writes := store.NewStore(h.c, h.c)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			run := &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{GenerateName: "store-", Namespace: h.ns},
				Spec: exagentv1.AgentRunSpec{AgentRef: exagentv1.LocalObjectReference{Name: "none"}, Input: "x"}}
			if err := h.c.Create(ctx, run); err != nil {
				t.Fatal(err)
			}
			now := time.Now()
			run.Status = exagentv1.AgentRunStatus{Phase: exagentv1.PhaseRunning, Attempts: 1, Claim: &exagentv1.Claim{
				Holder: "a", Attempt: 1, LeaseExpiresAt: metav1.NewMicroTime(now.Add(tc.readLease))}}
			if err := h.c.Status().Update(ctx, run); err != nil {
				t.Fatal(err)
			}
			read := run.DeepCopy()
			if tc.interfere != nil {
				tc.interfere(&run.Status)
				if err := h.c.Status().Update(ctx, run); err != nil {
					t.Fatal(err)
				}
			}
			next := *read.Status.DeepCopy()
			next.Message = "owner's outcome"
			written, err := writes.Commit(ctx, store.Write{Run: read, Status: next, Fence: tc.fence, Now: now})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Commit error = %v, want %v", err, tc.wantErr)
			}
			if err == nil && (written.Status.Message != "owner's outcome" || written.ResourceVersion == read.ResourceVersion) {
				t.Errorf("written = %q at %s, want the owner's outcome at a new version", written.Status.Message, written.ResourceVersion)
			}
		})
	}
}

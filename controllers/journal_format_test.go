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
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
)

// TestJournalFormat: every write is in this release's format; a paused run
// whose journal has no formatVersion (format 1, as v0.3.0 wrote it) is
// approved and resumes, its effect once, and is written in format 2; a
// run whose journal a newer release wrote is left as it is, but for its
// Ready condition saying UnknownFormat — approving it moves nothing.
func TestJournalFormat(t *testing.T) {
	h := newHarness(t)
	ts := newToolServer(t)
	h.startManager(controllers.Options{})
	h.createAgent("payments", refundAgent(ts))
	ctx := context.Background()

	t.Run("format 1 resumes and is rewritten in format 2", func(t *testing.T) {
		h.createRun("old", "payments")
		paused := h.waitPhase("old", exagentv1.PhaseAwaitingApproval)
		if paused.Status.FormatVersion != exagentv1.JournalFormat {
			t.Fatalf("a paused run's formatVersion = %d, want %d", paused.Status.FormatVersion, exagentv1.JournalFormat)
		}
		// As v0.3.0 left it: the same journal, no formatVersion.
		paused.Status.FormatVersion = 0
		if err := h.c.Status().Update(ctx, paused); err != nil {
			t.Fatal(err)
		}
		unversioned := h.waitRun("old", "formatVersion unset", func(r *exagentv1.AgentRun) bool { return r.Status.FormatVersion == 0 })
		if unversioned.Status.Format() != exagentv1.JournalFormatUnversioned {
			t.Fatalf("Format() of an unversioned journal = %d", unversioned.Status.Format())
		}
		h.approve(unversioned, "approve-1")
		done := h.waitPhase("old", exagentv1.PhaseSucceeded)
		if done.Status.FormatVersion != exagentv1.JournalFormat {
			t.Errorf("formatVersion after the resume = %d, want %d", done.Status.FormatVersion, exagentv1.JournalFormat)
		}
		if n := ts.calls(string(done.UID) + "/refund-1"); n != 1 {
			t.Errorf("the approved refund ran %d times, want once", n)
		}
	})

	t.Run("a newer format is left untouched", func(t *testing.T) {
		h.createRun("new", "payments")
		paused := h.waitPhase("new", exagentv1.PhaseAwaitingApproval)
		// A later release wrote it.
		paused.Status.FormatVersion = exagentv1.JournalFormat + 1
		if err := h.c.Status().Update(ctx, paused); err != nil {
			t.Fatal(err)
		}
		marked := h.waitRun("new", "Ready=False UnknownFormat", func(r *exagentv1.AgentRun) bool {
			c := meta.FindStatusCondition(r.Status.Conditions, exagentv1.ConditionReady)
			return c != nil && c.Status == metav1.ConditionFalse && c.Reason == exagentv1.ReasonUnknownFormat
		})
		c := meta.FindStatusCondition(marked.Status.Conditions, exagentv1.ConditionReady)
		if !strings.Contains(c.Message, "docs/upgrading.md") || !strings.Contains(c.Message, "format 3") {
			t.Errorf("the condition's message %q names neither the format nor what to do", c.Message)
		}
		h.approve(marked, "approve-1")
		h.waitEvents("new-approve-1", exagentv1.ReasonUnknownFormat) // the decision is held, unjudged
		after := h.get("new")
		if after.Status.FormatVersion != exagentv1.JournalFormat+1 {
			t.Errorf("formatVersion rewritten to %d", after.Status.FormatVersion)
		}
		if d := h.get("new"); d.Status.Phase != exagentv1.PhaseAwaitingApproval {
			t.Errorf("phase %s, want AwaitingApproval", d.Status.Phase)
		}
		strip := func(s exagentv1.AgentRunStatus) exagentv1.AgentRunStatus { s.Conditions = nil; return s }
		if diff := cmp.Diff(strip(paused.Status), strip(after.Status)); diff != "" {
			t.Errorf("the journal of a newer format changed (-before +after):\n%s", diff)
		}
		if n := ts.calls(string(after.UID) + "/refund-1"); n != 0 {
			t.Errorf("the refund of a run of an unknown format ran %d times", n)
		}
	})
}

// calls counts the tool requests made under one idempotency key.
func (ts *toolServer) calls(key string) int {
	n := 0
	for _, r := range ts.journal() {
		if r.Key == key {
			n++
		}
	}
	return n
}

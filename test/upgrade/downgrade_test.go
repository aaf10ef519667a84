//go:build upgrade

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

package upgrade

import (
	"context"
	"encoding/json"
	"os"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/fixture"
	"github.com/exagent-io/exagent/internal/testing/procs"
)

const runDowngrade = "after-upgrade"

// downgradeTimeout bounds how long the downgrade is watched.
const downgradeTimeout = 2 * time.Minute

// downgrade starts v0.3.0's manager again on the upgraded store, as a
// helm rollback would (a rollback leaves the CRDs, which helm never
// downgrades): this tree's manager stops with a run of its own waiting
// for approval, v0.3.0's starts as its own identity against this tree's
// CRDs (stored as v1beta1, converted by a /convert that v0.3.0 does not
// serve), webhook configuration and RBAC. Then, as a user of v0.3.0
// would, the test reads the run as v1alpha1 and alice approves it as
// v1alpha1, then as v1beta1. Observed (the refusals are asserted):
// v0.3.0's manager starts and keeps running — its informers' lists are
// served, it appears, from the apiserver's watch cache, which holds the
// objects converted while this tree's manager served /convert (the
// apiserver logs no conversion failure) — but every read or write that needs a
// conversion now fails (v0.3.0's webhook server answers /convert 404):
// the v1alpha1 read of the run ends in "StorageError: corrupt object …
// conversion webhook for exagent.io/v1beta1, Kind=AgentRun failed: the
// server could not find the requested resource", the v1alpha1 decision in
// "conversion webhook for exagent.io/v1alpha1, Kind=ApprovalDecision
// failed: …" (the same); the v1beta1 decision reaches v0.3.0's mutating
// webhook, which denies it: no kind "ApprovalDecision" is registered for
// version "exagent.io/v1beta1"; and v0.3.0's decision controller logs, for every
// decision, that it may not patch its owner (this tree's RBAC grants no
// patch on approvaldecisions). The run stays waiting, no effect is
// applied: loud, never a silent change of a run. The exact texts are
// logged (DOWNGRADE: lines).
func downgrade(t *testing.T, pl *plane, s *scenario, rel release, head *procs.Process) {
	t.Helper()
	if err := create(pl.c, runObject(runDowngrade, agentOps)); err != nil {
		t.Fatal(err)
	}
	var paused *exagentv1.AgentRun
	if err := procs.Poll(stateTimeout, func() (bool, error) {
		runs, err := s.runs()
		if err != nil {
			return false, nil
		}
		paused = runs[runDowngrade]
		return paused != nil && paused.Status.Phase == exagentv1.PhaseAwaitingApproval, nil
	}); err != nil {
		t.Fatalf("run %s did not pause under this tree: %v", runDowngrade, err)
	}
	if paused.Status.FormatVersion != exagentv1.JournalFormat {
		t.Errorf("run %s, written by this tree, has status.formatVersion %d, want %d", runDowngrade, paused.Status.FormatVersion, exagentv1.JournalFormat)
	}
	if err := head.Stop(syscall.SIGTERM, time.Minute); err != nil && !procs.IsSignalExit(err) {
		t.Logf("this tree's manager's stop: %v", err)
	}
	old, err := pl.startManager(releaseVersion+"-again", rel.Manager)
	if err != nil {
		// Refused at start: loud.
		t.Logf("DOWNGRADE: %s's manager does not start on the upgraded store: %v", releaseVersion, err)
		return
	}
	defer old.Kill()
	// As v0.3.0's users do: v1alpha1, one try each (a refusal is the point).
	ctx := context.Background()
	alpha, alphaAlice := speak(pl.c, v1alpha1), speak(pl.users[alice], v1alpha1)
	readErr := alpha.Get(ctx, client.ObjectKeyFromObject(paused), &exagentv1.AgentRun{})
	t.Logf("DOWNGRADE: reading run %s as v1alpha1: %v", runDowngrade, readErr)
	if readErr == nil {
		t.Errorf("run %s (stored as v1beta1) read as v1alpha1 without this tree's /convert", runDowngrade)
	}
	var alphaErr, decideErr error
	if a := paused.Status.Pending(); len(a) == 1 {
		d := fixture.MakeDecision("approve-after-downgrade", ns, runDowngrade).Approve(a[0]).Reason("after the downgrade").Obj()
		alphaErr = alphaAlice.Create(ctx, d.DeepCopy())
		t.Logf("DOWNGRADE: alice's decision as v1alpha1: %v", alphaErr)
		decideErr = pl.users[alice].Create(ctx, d.DeepCopy())
		t.Logf("DOWNGRADE: alice's decision as v1beta1: %v", decideErr)
	}
	if alphaErr == nil && decideErr == nil {
		t.Errorf("v0.3.0's webhook admitted alice's decision on this tree's CRDs in both versions")
	}
	var r *exagentv1.AgentRun
	waitErr := procs.Poll(downgradeTimeout, func() (bool, error) {
		runs, err := s.runs()
		if err != nil {
			return false, nil
		}
		r = runs[runDowngrade]
		return r != nil && r.Status.Phase.IsTerminal(), old.Alive()
	})
	exited := old.Alive() != nil
	log, _ := os.ReadFile(old.Log)
	errorsLogged := errorLines(string(log))
	t.Logf("DOWNGRADE to %s on the upgraded store: manager exited: %v; decision: %v; run %s: %s",
		releaseVersion, exited, decideErr, runDowngrade, describe(r))
	for _, l := range errorsLogged {
		t.Logf("DOWNGRADE: %s's manager logged: %s", releaseVersion, l)
	}
	if r != nil {
		if dropped := droppedFields(paused, r); len(dropped) > 0 {
			t.Logf("DOWNGRADE: %s's manager rewrote run %s without the status fields it does not know: %v",
				releaseVersion, runDowngrade, dropped)
		}
	}
	// No effect twice, whatever the downgrade did.
	for key, n := range s.effects() {
		if n > 1 {
			t.Errorf("after the downgrade, key %s applied %d times", key, n)
		}
	}
	if alphaErr != nil && decideErr != nil && r != nil && r.Status.Phase.IsTerminal() {
		t.Errorf("run %s ended %s under %s with no decision admitted", runDowngrade, describe(r), releaseVersion)
	}
	ended := waitErr == nil && r != nil && r.Status.Phase == exagentv1.PhaseSucceeded
	if ended {
		n := 0
		for _, c := range r.Status.Calls {
			n += s.effects()[c.IdempotencyKey]
		}
		if n != 1 {
			t.Errorf("run %s ended under %s with %d effects, want 1", runDowngrade, releaseVersion, n)
		}
	}
	if !ended && !exited && len(errorsLogged) == 0 {
		t.Errorf("the downgrade is silent: %s's manager runs, logs no error, and run %s is %s after %s",
			releaseVersion, runDowngrade, describe(r), downgradeTimeout)
	}
}

// errorLines are the distinct messages of the error lines of a manager's log.
func errorLines(log string) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range strings.Split(log, "\n") {
		var e struct{ Level, Msg, Error, Controller string }
		if json.Unmarshal([]byte(l), &e) != nil || e.Level != "error" {
			continue
		}
		m := e.Msg + ": " + e.Error
		if e.Controller != "" {
			m = e.Controller + ": " + m
		}
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	return out
}

// droppedFields are the top-level status fields of before (written by this
// tree) that after (written by the old manager) no longer has.
func droppedFields(before, after *exagentv1.AgentRun) []string {
	fields := func(st exagentv1.AgentRunStatus) map[string]bool {
		b, _ := json.Marshal(st)
		m := map[string]json.RawMessage{}
		_ = json.Unmarshal(b, &m)
		out := map[string]bool{}
		for k := range m {
			out[k] = true
		}
		return out
	}
	// Fields that come and go with the run's phase are not a loss.
	transient := map[string]bool{"pendingApprovals": true, "claim": true}
	a := fields(after.Status)
	var out []string
	for k := range fields(before.Status) {
		if !a[k] && !transient[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

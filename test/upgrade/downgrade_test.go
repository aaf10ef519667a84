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
	"encoding/json"
	"os"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
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
// CRDs, webhook configuration and RBAC, and alice approves the run
// (v0.3.0's webhook admits her decision). What v0.3.0 does is recorded
// in the log; the test asserts it is loud — the manager refuses (exits),
// or logs errors — or harmless: the run ends, its one effect applied once.
// Whatever happens, no effect is applied twice. The status fields this
// tree journals that v0.3.0 does not know and drops when it writes the
// run are logged (docs/upgrading.md: a downgrade).
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
	var decideErr error
	if a := paused.Status.Pending(); len(a) == 1 {
		d := fixture.MakeDecision("approve-after-downgrade", ns, runDowngrade).Approve(a[0]).Reason("after the downgrade").Obj()
		decideErr = create(pl.users[alice], d)
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

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
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/authz"
	"github.com/exagent-io/exagent/internal/testing/fixture"
	"github.com/exagent-io/exagent/internal/testing/procs"
	"github.com/exagent-io/exagent/internal/testing/testenv"
	"github.com/exagent-io/exagent/test/chaos"
)

// Deadlines: generous, for a loaded two-core machine.
const (
	stateTimeout = 3 * time.Minute
	endTimeout   = 5 * time.Minute
)

// oldDecision is a decision v0.3.0 admitted, as it was read before the
// upgrade, with the receipt the run journaled for it.
type oldDecision struct {
	d       *exagentv1.ApprovalDecision
	run     string
	receipt *exagentv1.Receipt
}

// TestUpgradeFromLastRelease upgrades a control plane with runs in every
// state v0.3.0 supports to this tree, as helm upgrade would, and checks
// that each run ends as it would have without the upgrade (see doc.go).
func TestUpgradeFromLastRelease(t *testing.T) {
	ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	started := time.Now()
	k8sBin, err := testenv.BinaryAssets()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := buildRelease(releaseCommit, releaseVersion)
	if err != nil {
		t.Fatal(err)
	}
	work, err := os.MkdirTemp("", "exagent-upgrade-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("UPGRADE_KEEP") != "" {
			t.Logf("logs kept in %s", work)
			return
		}
		_ = os.RemoveAll(work)
	})
	head := procs.Builder{Dir: filepath.Join(work, "bin")}
	if _, err := head.Build(procs.ManagerRelease, procs.Devcluster, procs.Plugin); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s built from %s (cached in %s); this tree's binaries built; %s", releaseVersion, rel.Commit,
		filepath.Dir(rel.Manager), time.Since(started).Round(time.Second))

	webhookPort, err := procs.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	sinkPort, err := procs.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	pl := &plane{dir: filepath.Join(work, "cluster"), dataDir: filepath.Join(work, "etcd-data"), webhookPort: webhookPort, k8sBin: k8sBin}
	t.Cleanup(func() {
		if err := pl.stop(); err != nil {
			t.Errorf("stopping the control plane: %v", err)
		}
	})

	// ---- v0.3.0: its control plane, its CRDs, webhooks and RBAC, its manager.
	if err := pl.start(releaseVersion, rel.Devcluster, rel.Root, v1alpha1); err != nil {
		t.Fatal(err)
	}
	key, keyValue := newSinkKey()
	s := &scenario{pl: pl, reader: pl.c, sink: &sink{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(sinkPort)), key: key}, sinkKey: keyValue}
	t.Cleanup(s.sink.close)
	if s.model, err = chaos.NewModelServer(s.reader, s.script); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.model.Close)
	if s.tools, err = chaos.NewToolServer(s.reader); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.tools.Close)
	if s.slow, err = chaos.NewToolServer(s.reader); err != nil {
		t.Fatal(err)
	}
	s.slow.Idempotent("/" + toolRefund)
	t.Cleanup(s.slow.Close)
	for _, o := range s.fixtures() {
		if err := create(pl.c, o); err != nil {
			t.Fatal(err)
		}
	}

	first, err := pl.startManager(releaseVersion, rel.Manager, "--seal-value-bytes", sealValueBytes)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Kill()
	for _, a := range s.agents() {
		if err := create(pl.c, a); err != nil {
			t.Fatal(err)
		}
	}

	// Uncertain: the manager dies (kill -9) while the non-idempotent charge
	// is at the tool server, which applied it; the next v0.3.0 manager
	// finds the intent without an outcome and marks the call Uncertain.
	s.tools.HoldWhen(func(r chaos.Request) bool { return r.Run.Name == runUncertain })
	if err := create(pl.c, runObject(runUncertain, agentOps)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.tools.Held():
	case <-time.After(stateTimeout):
		t.Fatalf("the charge of run %s never reached the tool server\n%s", runUncertain, first.Tail())
	}
	first.Kill()

	second, err := pl.startManager(releaseVersion, rel.Manager, "--seal-value-bytes", sealValueBytes)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Kill()
	s.slow.HoldWhen(func(r chaos.Request) bool { return r.Run.Name == runInflight })
	for name, agent := range map[string]string{runPaused: agentOps, runTwice: agentOps, runInflight: agentOps,
		runTree: agentOps, runRetained: agentOps, runNotified: agentNotified} {
		run := runObject(name, agent)
		if name == runRetained {
			run.Spec.TTLSecondsAfterFinished = ptrInt32(retainedTTL)
		}
		if err := create(pl.c, run); err != nil {
			t.Fatal(err)
		}
	}

	// Every run reaches its state; alice approves the first call of
	// approved-paused (v0.3.0's webhook stamps and signs her decision).
	inflightHeld := false
	var notifyPending *exagentv1.NotificationRecord
	err = procs.Poll(stateTimeout, func() (bool, error) {
		if err := second.Alive(); err != nil {
			return false, err
		}
		select {
		case <-s.slow.Held():
			inflightHeld = true
		default:
		}
		runs, err := s.runs()
		if err != nil {
			return false, nil
		}
		phase := func(name string) exagentv1.RunPhase {
			if r := runs[name]; r != nil {
				return r.Status.Phase
			}
			return ""
		}
		if r := runs[runTwice]; r != nil && r.Status.Phase == exagentv1.PhaseAwaitingApproval {
			for _, a := range r.Status.Pending() {
				if c := r.Status.Call(a.CallID); c != nil && c.ID == "wire-1" {
					d := fixture.MakeDecision("approve-wire-1", ns, runTwice).Approve(a).Reason("before the upgrade").Obj()
					if err := create(pl.users[alice], d); err != nil {
						return false, err
					}
				}
			}
		}
		twicePaused := false
		if r := runs[runTwice]; r != nil && r.Status.Phase == exagentv1.PhaseAwaitingApproval && len(r.Status.Receipts) > 0 {
			for _, a := range r.Status.Pending() {
				if c := r.Status.Call(a.CallID); c != nil && c.ID == "wire-2" {
					twicePaused = true
				}
			}
		}
		notifyPending = nil
		if r := runs[runNotified]; r != nil {
			for i, n := range r.Status.Notifications {
				if n.Event == exagentv1.NotifyApprovalRequested && n.State == exagentv1.NotificationPending && n.Attempts > 0 {
					notifyPending = r.Status.Notifications[i].DeepCopy()
				}
			}
		}
		child := childOf(runs)
		return phase(runUncertain) == exagentv1.PhaseUncertain &&
			phase(runPaused) == exagentv1.PhaseAwaitingApproval &&
			twicePaused && inflightHeld &&
			child != "" && phase(child) == exagentv1.PhaseAwaitingApproval && !phase(runTree).IsTerminal() &&
			phase(runRetained) == exagentv1.PhaseSucceeded &&
			phase(runNotified) == exagentv1.PhaseAwaitingApproval && notifyPending != nil, nil
	})
	if err != nil {
		runs, _ := s.runs()
		var b strings.Builder
		for _, name := range sortedKeys(runs) {
			fmt.Fprintf(&b, "\n  %s: %s", name, describe(runs[name]))
		}
		t.Fatalf("the runs did not reach their states under %s: %v (refund in flight: %v)%s\nmanager log:%s",
			releaseVersion, err, inflightHeld, b.String(), lines(second.Tail()))
	}

	// Before the upgrade: every decision, with its signature, and the
	// receipt its run journaled; the run a child and the retained run were.
	before, err := s.runs()
	if err != nil {
		t.Fatal(err)
	}
	child := childOf(before)
	old := recordDecisions(t, pl, before)
	if len(old) == 0 {
		t.Fatal("no decision existed before the upgrade")
	}
	retainedUID := before[runRetained].UID
	segments := &exagentv1.AgentRunSegmentList{}
	if err := pl.c.List(context.Background(), segments, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(segments.Items) == 0 {
		t.Errorf("%s sealed no value into a segment: the test does not read its segments", releaseVersion)
	}
	t.Logf("before the upgrade: %s; %d segments", states(before), len(segments.Items))

	// ---- The upgrade, as helm upgrade rolls it: the old manager stops
	// (SIGTERM, its drain), the control plane restarts with this tree's
	// CRDs, webhooks, RBAC (devcluster --root this repository) on the same
	// etcd data, and this tree's manager starts.
	upgradeAt := time.Now()
	if err := second.Stop(syscall.SIGTERM, time.Minute); err != nil && !procs.IsSignalExit(err) {
		t.Logf("%s manager's stop: %v", releaseVersion, err)
	}
	s.slow.ReleaseAll()
	if err := pl.stop(); err != nil {
		t.Fatalf("stopping %s's control plane: %v", releaseVersion, err)
	}
	if err := pl.start("head", head.Path("devcluster"), testenv.RepoRoot(), exagentv1.GroupVersion); err != nil {
		t.Fatal(err)
	}
	storedAtUpgrade, err := storedVersions(pl.c)
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := pl.startManager("head", head.Path("manager"),
		"--webhook-client-ca", filepath.Join(pl.dir, "webhook", "client-ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	defer mgr.Kill()
	// The storage migration goes on beside everything below.
	migrated := make(chan migration, 1)
	go func(c client.Client, started time.Time) { migrated <- watchMigration(c, started) }(pl.c, time.Now())
	if err := s.sink.up(); err != nil {
		t.Fatal(err)
	}
	t.Logf("upgraded in %s", time.Since(upgradeAt).Round(time.Second))

	// ---- After: decide, resolve and answer as people do, with this
	// tree's plugin.
	plugin := func(user string, args ...string) (string, error) {
		cmd := exec.Command(head.Path("kubectl-approve"), args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+pl.kubeconfig(user), "HOME="+filepath.Join(work, "home"))
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	mustPlugin := func(user string, args ...string) string {
		t.Helper()
		var out string
		// The plugin may meet admission before the manager's webhook server
		// has its certificate watcher going: try again on failure, within a
		// deadline.
		err := procs.Poll(time.Minute, func() (bool, error) {
			var err error
			out, err = plugin(user, args...)
			return err == nil, nil
		})
		if err != nil {
			t.Fatalf("kubectl approve %s as %s: %v\n%s\nmanager log:%s", strings.Join(args, " "), user, err, out, lines(mgr.Tail()))
		}
		return out
	}
	mustPlugin(alice, runPaused, "-n", ns, "--reason", "after the upgrade")
	mustPlugin(alice, runTwice, "-n", ns, "--reason", "after the upgrade")
	mustPlugin(alice, runTree, "-n", ns, "--reason", "the child's call, by the root's name")
	// carol resolves the Uncertain charge with the oracle's evidence.
	unc := before[runUncertain].Status.UncertainCalls()
	if len(unc) != 1 {
		t.Fatalf("run %s has %d uncertain calls, want 1", runUncertain, len(unc))
	}
	outcome, evidence := "Retry", "oracle: no effect of key "+unc[0].IdempotencyKey
	if r, ok := s.tools.Applied(unc[0].IdempotencyKey); ok {
		outcome, evidence = "Succeeded", fmt.Sprintf("oracle: %s applied key %s", r.Server, r.Key)
	}
	mustPlugin(carol, "resolve", runUncertain, "-n", ns, "--call", unc[0].ID, "--outcome", outcome, "--evidence", evidence)

	// The notification pending across the upgrade is delivered, signed,
	// before anyone decides on its approval (a decision would supersede it).
	if err := procs.Poll(endTimeout, func() (bool, error) {
		for _, d := range s.sink.received() {
			if d.ID == notifyPending.ID {
				return true, nil
			}
		}
		return false, mgr.Alive()
	}); err != nil {
		t.Errorf("the notification %s pending at the upgrade was not delivered: %v (received %d)", notifyPending.ID, err, len(s.sink.received()))
	}
	mustPlugin(alice, runNotified, "-n", ns, "--reason", "after the upgrade")

	// Every run ends.
	names := []string{runPaused, runTwice, runInflight, runUncertain, runTree, child, runRetained, runNotified}
	var after map[string]*exagentv1.AgentRun
	waitErr := procs.Poll(endTimeout, func() (bool, error) {
		if after, err = s.runs(); err != nil {
			return false, nil
		}
		for _, name := range names {
			if r := after[name]; r == nil || !r.Status.Phase.IsTerminal() {
				return false, nil
			}
		}
		return true, mgr.Alive()
	})
	after, _ = s.runs()
	stuck := 0
	for _, name := range names {
		if r := after[name]; r == nil || r.Status.Phase != exagentv1.PhaseSucceeded {
			t.Errorf("run %s ended %s, want Succeeded as without the upgrade", name, describe(r))
			if r == nil || !r.Status.Phase.IsTerminal() {
				stuck++
			}
		}
	}
	if waitErr != nil {
		t.Errorf("%d runs not ended within %s: %v\nmanager log:%s", stuck, endTimeout, waitErr, lines(mgr.Tail()))
	}

	// The journal format: v0.3.0 wrote no status.formatVersion (format 1);
	// this tree writes exagentv1.JournalFormat on every run it writes —
	// each run that had not ended before the upgrade, which it drove to
	// its end. (The retained run, ended under v0.3.0, is in the table.)
	for _, name := range names {
		b, r := before[name], after[name]
		if b != nil && b.Status.FormatVersion != 0 {
			t.Errorf("run %s had status.formatVersion %d under %s, which writes none", name, b.Status.FormatVersion, releaseVersion)
		}
		if r == nil || b == nil || b.Status.Phase.IsTerminal() {
			continue
		}
		if r.Status.FormatVersion != exagentv1.JournalFormat {
			t.Errorf("run %s, written by this tree after the upgrade, has status.formatVersion %d, want %d",
				name, r.Status.FormatVersion, exagentv1.JournalFormat)
		}
	}

	// Each effect exactly once: every call's key applied once by the tool
	// servers, and no key applied that no call has.
	applied := s.effects()
	want := map[string]string{} // key → run
	for _, name := range names {
		r := after[name]
		if r == nil {
			continue
		}
		n := 0
		for _, c := range r.Status.Calls {
			if c.Tool == toolCharge || c.Tool == toolWire || c.Tool == toolRefund {
				want[c.IdempotencyKey] = name
				n++
			}
		}
		w := wantCalls[name]
		if name == child {
			w = 1
		}
		if n != w {
			t.Errorf("run %s journaled %d tool calls with an effect, want %d", name, n, w)
		}
	}
	effects, duplicates, lost := 0, 0, 0
	for key, n := range applied {
		effects += n
		if n > 1 {
			duplicates += n - 1
			t.Errorf("key %s (run %s) applied %d times", key, want[key], n)
		}
		if _, ok := want[key]; !ok {
			t.Errorf("key %s applied %d times by no journaled call", key, n)
		}
	}
	for key, run := range want {
		if applied[key] == 0 {
			lost++
			t.Errorf("key %s of run %s never applied", key, run)
		}
	}

	// This tree read what v0.3.0 sealed into segments: each run's last
	// model request carries its whole input and a tool result for every
	// call of the run.
	last := map[string]chaos.Request{}
	for _, r := range s.model.Journal() {
		last[r.Run.Name] = r
	}
	for _, name := range names {
		r, req := after[name], last[name]
		if r == nil {
			continue
		}
		input, results := false, 0
		for _, m := range req.Messages {
			switch m.Role {
			case "user":
				input = input || m.Content == r.Spec.Input
			case "tool":
				results++
			}
		}
		if !input || results != len(r.Status.Calls) {
			t.Errorf("run %s's last model request has its input: %v, %d tool results for %d calls", name, input, results, len(r.Status.Calls))
		}
	}
	resends := 0
	for _, r := range s.slow.Journal() {
		if r.Run.Name == runInflight {
			resends++
		}
	}
	t.Logf("the refund in flight at the stop was sent %d times (once applied: the endpoint is idempotent)", resends)

	// Every decision v0.3.0 signed verifies with this tree's code, on the
	// objects as this tree's apiserver serves them; the receipts are kept.
	signer := loadSigner(t, pl)
	for _, o := range old {
		d := &exagentv1.ApprovalDecision{}
		if err := pl.c.Get(context.Background(), client.ObjectKeyFromObject(o.d), d); err != nil {
			t.Errorf("decision %s after the upgrade: %v", o.d.Name, err)
			continue
		}
		if got, was := d.Annotations[authz.SignatureAnnotation], o.d.Annotations[authz.SignatureAnnotation]; got != was {
			t.Errorf("decision %s: signature %q after the upgrade, %q before", d.Name, got, was)
		}
		run := after[o.run]
		if run == nil {
			continue
		}
		if err := signer.Verify(d, run); err != nil {
			t.Errorf("decision %s (run %s) signed by %s does not verify after the upgrade: %v", d.Name, o.run, releaseVersion, err)
		}
		if o.receipt != nil && !hasReceipt(run, o.receipt) {
			t.Errorf("run %s lost the receipt of decision %s (%+v)", o.run, d.Name, *o.receipt)
		}
	}
	for _, name := range []string{runPaused, runTwice, runInflight, runUncertain, runTree, runRetained, runNotified} {
		if r := after[name]; r != nil {
			if err := signer.VerifyRequester(r); err != nil {
				t.Errorf("run %s: the requester %s signed does not verify after the upgrade: %v", name, releaseVersion, err)
			}
		}
	}

	// The retained run is still there, its TTL not reached.
	if r := after[runRetained]; r == nil || r.UID != retainedUID {
		t.Errorf("run %s (TTL %ds) is gone after the upgrade", runRetained, retainedTTL)
	}
	// Every delivery verifies with the sink's key.
	for _, d := range s.sink.received() {
		if !d.Verified {
			t.Errorf("notification %s (%s) does not verify with the sink's key", d.ID, d.Type)
		}
	}

	// Every exagent.io CRD stores only v1beta1 once the manager migrated
	// what v0.3.0 stored as v1alpha1 (a StorageVersionMigration each,
	// carried out by kube-controller-manager) and pruned storedVersions.
	m := <-migrated
	t.Logf("storage: storedVersions at the upgrade: %s", formatStored(storedAtUpgrade))
	t.Logf("storage: storedVersions %s after the manager's start: %s; StorageVersionMigrations: %v",
		m.took.Round(time.Second), formatStored(m.stored), m.svms)
	if m.err != nil {
		t.Errorf("the CRDs' storedVersions did not become [%s]: %v\nmanager log:%s", exagentv1.GroupVersion.Version, m.err, lines(mgr.Tail()))
	}

	report(t, before, after, names, len(old), effects, duplicates, lost, stuck, len(s.sink.received()))
	t.Logf("upgrade test: %s in all", time.Since(started).Round(time.Second))

	if t.Failed() {
		return
	}
	downgrade(t, pl, s, rel, mgr)
}

func ptrInt32(v int32) *int32 { return &v }

// recordDecisions reads every ApprovalDecision and, for each, the receipt
// its run journaled.
func recordDecisions(t *testing.T, pl *plane, runs map[string]*exagentv1.AgentRun) []oldDecision {
	t.Helper()
	list := &exagentv1.ApprovalDecisionList{}
	if err := pl.c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []oldDecision
	for i := range list.Items {
		d := list.Items[i].DeepCopy()
		if d.Annotations[authz.SignatureAnnotation] == "" {
			t.Errorf("decision %s admitted by %s carries no signature", d.Name, releaseVersion)
		}
		o := oldDecision{d: d, run: d.Spec.RunRef.Name}
		if r := runs[o.run]; r != nil {
			for j := range r.Status.Receipts {
				if r.Status.Receipts[j].DecisionName == d.Name {
					o.receipt = r.Status.Receipts[j].DeepCopy()
				}
			}
		}
		if o.receipt == nil {
			t.Errorf("decision %s: run %s journaled no receipt of it before the upgrade", d.Name, o.run)
		}
		out = append(out, o)
	}
	return out
}

func hasReceipt(run *exagentv1.AgentRun, want *exagentv1.Receipt) bool {
	for _, r := range run.Status.Receipts {
		if r.OperationID == want.OperationID && r.DecisionName == want.DecisionName && r.Decision == want.Decision &&
			r.PayloadHash == want.PayloadHash && r.Revision == want.Revision &&
			(r.Actor == nil) == (want.Actor == nil) && (r.Actor == nil || r.Actor.Username == want.Actor.Username) {
			return true
		}
	}
	return false
}

// loadSigner reads the decision-signing key the managers share.
func loadSigner(t *testing.T, pl *plane) *authz.Signer {
	t.Helper()
	nsName, name, _ := strings.Cut(signingSecret, "/")
	s, err := authz.LoadSigner(context.Background(), pl.c, readOnly{}, types.NamespacedName{Namespace: nsName, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// readOnly is a client.Writer that refuses: the test only reads the key
// the managers created.
type readOnly struct{ client.Writer }

func (readOnly) Create(context.Context, client.Object, ...client.CreateOption) error {
	return fmt.Errorf("the test does not create the signing key")
}

// states is each run's phase, on one line.
func states(runs map[string]*exagentv1.AgentRun) string {
	var parts []string
	for _, name := range sortedKeys(runs) {
		parts = append(parts, name+"="+string(runs[name].Status.Phase))
	}
	return strings.Join(parts, " ")
}

// report prints the table of the upgrade.
func report(t *testing.T, before, runs map[string]*exagentv1.AgentRun, names []string, decisions, effects, duplicates, lost, stuck, notifications int) {
	perPhase := map[string]int{}
	for _, name := range names {
		phase := "missing"
		if r := runs[name]; r != nil {
			phase = string(r.Status.Phase)
		}
		perPhase[phase]++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "upgrade %s (%s) → this tree\n", releaseVersion, releaseCommit)
	format := func(r *exagentv1.AgentRun) string {
		if r == nil || r.Status.FormatVersion == 0 {
			return "-"
		}
		return strconv.Itoa(int(r.Status.FormatVersion))
	}
	fmt.Fprintf(&b, "  %-28s %-8s %s\n", "run", "format", "ended")
	for _, name := range names {
		fmt.Fprintf(&b, "  %-28s %-8s %s\n", name, format(before[name])+"→"+format(runs[name]), describe(runs[name]))
	}
	fmt.Fprintf(&b, "  %-28s", "runs per state")
	for _, p := range sortedKeys(perPhase) {
		fmt.Fprintf(&b, " %s=%d", p, perPhase[p])
	}
	fmt.Fprintf(&b, "\n  %-28s %d\n  %-28s %d\n  %-28s %d\n  %-28s %d\n  %-28s %d\n  %-28s %d\n",
		"effects", effects, "duplicates", duplicates, "lost", lost, "stuck", stuck,
		"old decisions verified", decisions, "notifications delivered", notifications)
	t.Log(b.String())
}

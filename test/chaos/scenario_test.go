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
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/fixture"
	"github.com/exagent-io/exagent/internal/testing/procs"
)

// leaseDuration of every run: short, so a killed owner's runs are
// recovered within seconds.
const leaseDuration = "5s"

// Tools every scenario's Agent may use (paths of the tool server).
const (
	toolCharge = "charge" // http, not idempotent
	toolRefund = "refund" // http, idempotent
	toolWire   = "wire"   // http, not idempotent, asks a human
	toolScale  = "scale"  // builtin Scale of Deployments
)

// scaleTo is the replicas every builtin call asks for (Deployments start at 1).
const scaleTo = 3

// scenario is one test's namespace with its oracles: the recorder of every
// run write, the tool and model servers, and the decisions it made.
type scenario struct {
	t     *testing.T
	name  string
	cl    *cluster
	ns    string
	rec   *Recorder
	tools *ToolServer
	model *ModelServer
	// script answers the model server: what run asks at step.
	script func(run types.NamespacedName, step int32) Turn
	// labels, when set, are a new run's labels (the sharded R2 stamps
	// each run's shard, as admission with --shards would).
	labels func(name string) map[string]string

	mu        sync.Mutex
	decisions []Decision
	made      map[string]bool
	runs      []string
	uids      map[string]types.UID
	refused   int // decision attempts admission refused (bob's)
	resolved  int
	kills     int
	faults    int
}

func newScenario(t *testing.T, cl *cluster, name string, script func(run types.NamespacedName, step int32) Turn) *scenario {
	t.Helper()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	s := &scenario{t: t, name: name, cl: cl, ns: "chaos-" + name + "-" + hex.EncodeToString(b), script: script,
		made: map[string]bool{}, uids: map[string]types.UID{}}
	ctx := context.Background()
	for _, o := range s.fixtures() {
		if err := cl.c.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	var err error
	if s.rec, err = NewRecorder(cl.c, s.ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.rec.Stop)
	if s.tools, err = NewToolServer(cl.c); err != nil {
		t.Fatal(err)
	}
	s.tools.Idempotent("/" + toolRefund)
	t.Cleanup(s.tools.Close)
	if s.model, err = NewModelServer(cl.c, func(run types.NamespacedName, step int32) Turn { return s.script(run, step) }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.model.Close)
	return s
}

// fixtures: the namespace, who may decide (RBAC), the runs' ServiceAccount
// with the right to scale Deployments, and the model's API key.
func (s *scenario) fixtures() []client.Object {
	ns := s.ns
	bind := func(name, role string, subject rbacv1.Subject) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}, Subjects: []rbacv1.Subject{subject}}
	}
	user := func(n string) rbacv1.Subject {
		return rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: n}
	}
	group := rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "resolvers"}
	return []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		bind("alice-approves", "exagent-approver", user(alice)),
		bind("alice-views", "exagent-viewer", user(alice)),
		bind("resolvers-resolve", "exagent-resolver", group),
		bind("resolvers-view", "exagent-viewer", group),
		// bob may create decisions and read runs, and decide nothing.
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "decision-writer", Namespace: ns}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"exagent.io"}, Resources: []string{"approvaldecisions"}, Verbs: []string{"create", "get"}},
			{APIGroups: []string{"exagent.io"}, Resources: []string{"agentruns", "agents"}, Verbs: []string{"get", "list"}},
		}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bob-writes-decisions", Namespace: ns},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "decision-writer"}, Subjects: []rbacv1.Subject{user(bob)}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: ns}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "scaler", Namespace: ns}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list"}},
			{APIGroups: []string{"apps"}, Resources: []string{"deployments/scale"}, Verbs: []string{"get", "patch", "update"}},
		}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "agent-scales", Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "scaler"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "agent", Namespace: ns}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "openai", Namespace: ns}, StringData: map[string]string{"apiKey": "sk-chaos"}},
	}
}

// createAgent creates the scenario's Agent: the OpenAI-compatible model
// server, every tool, and a policy that asks before wire.
func (s *scenario) createAgent(name string) {
	s.t.Helper()
	httpTool := func(name string, idempotent bool) exagentv1.ToolSpec {
		t := fixture.HTTPTool(name, s.tools.URL+"/"+name)
		t.HTTP.Timeout, t.HTTP.Idempotent = "20s", idempotent
		return t
	}
	a := &exagentv1.Agent{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns}, Spec: exagentv1.AgentSpec{
		Instructions: "You are the fault suite's agent.",
		Model: exagentv1.ModelSpec{Provider: exagentv1.ModelProviderOpenAI, Name: "chaos-model", BaseURL: s.model.URL,
			APIKeySecretRef: &exagentv1.SecretKeySelector{Name: "openai", Key: "apiKey"}},
		Tools: []exagentv1.ToolSpec{
			httpTool(toolCharge, false), httpTool(toolRefund, true), httpTool(toolWire, false),
			{Name: toolScale, Description: "scale a Deployment", Parameters: fixture.Raw(map[string]any{"type": "object", "properties": map[string]any{
				"name": map[string]any{"type": "string"}, "replicas": map[string]any{"type": "integer"}}}),
				Builtin: &exagentv1.BuiltinTool{Operation: exagentv1.BuiltinScale, Kinds: []string{"Deployment.apps"}}},
		},
		Policy: exagentv1.PolicySpec{Default: exagentv1.PolicyAllow, Rules: []exagentv1.PolicyRule{
			{Name: "ask-before-wiring", Tools: []string{toolWire}, Action: exagentv1.PolicyAsk}}},
	}}
	if err := s.cl.c.Create(context.Background(), a); err != nil {
		s.t.Fatalf("creating agent %s: %v", name, err)
	}
}

// deployment is the one a run's builtin call scales.
func deploymentOf(run string) string { return run + "-web" }

// scaleCall is the builtin call of a run (its Deployment to scaleTo).
func scaleCall(run, id string) ToolCall {
	return ToolCall{ID: id, Name: toolScale, Args: map[string]any{"name": deploymentOf(run), "replicas": scaleTo}}
}

// createRun creates run name of agent (and, when it scales, its
// Deployment), retrying while admission is unavailable.
func (s *scenario) createRun(name, agent string, scales ...string) error {
	ctx := context.Background()
	if len(scales) > 0 {
		labels := map[string]string{"app": name}
		dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: deploymentOf(name), Namespace: s.ns},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web:1"}}}}}}
		if err := s.cl.c.Create(ctx, dep); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating deployment of %s: %w", name, err)
		}
	}
	run, err := s.create(s.runObject(name, agent))
	if err != nil {
		return err
	}
	for _, id := range scales {
		s.rec.ExpectScale(deploymentOf(name), types.NamespacedName{Namespace: s.ns, Name: name}, run.UID, id, scaleTo)
	}
	return nil
}

// runObject is run name of agent as every scenario creates it.
func (s *scenario) runObject(name, agent string) *exagentv1.AgentRun {
	var labels map[string]string
	if s.labels != nil {
		labels = s.labels(name)
	}
	return &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns, Labels: labels}, Spec: exagentv1.AgentRunSpec{
		AgentRef: exagentv1.LocalObjectReference{Name: agent}, Input: RunInputPrefix + s.ns + "/" + name,
		ServiceAccountName: "agent", LeaseDuration: leaseDuration, ActiveTimeLimit: exagentv1.Never,
	}}
}

// create creates run as the cluster's admin, retrying while admission is
// unavailable, and records it among the scenario's runs.
func (s *scenario) create(run *exagentv1.AgentRun) (*exagentv1.AgentRun, error) {
	return s.createAs(s.cl.c, run)
}

// createAs is create with c's credentials: admission stamps its user as
// the run's requester.
func (s *scenario) createAs(c client.Client, run *exagentv1.AgentRun) (*exagentv1.AgentRun, error) {
	ctx := context.Background()
	name := run.Name
	err := procs.Poll(time.Minute, func() (bool, error) {
		err := c.Create(ctx, run.DeepCopy())
		if apierrors.IsAlreadyExists(err) {
			return true, c.Get(ctx, client.ObjectKeyFromObject(run), run)
		}
		if err == nil {
			return true, c.Get(ctx, client.ObjectKeyFromObject(run), run)
		}
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
			return false, err // the manifest is refused: retrying will not help
		}
		return false, nil
	})
	if err != nil {
		return nil, fmt.Errorf("creating run %s: %w", name, err)
	}
	s.mu.Lock()
	s.runs = append(s.runs, name)
	s.uids[name] = run.UID
	s.mu.Unlock()
	return run, nil
}

// decideLoop is the scenario's humans until ctx ends: alice approves
// every pending approval (bob tries first on some, and admission must
// refuse him), and carol resolves every Uncertain call with the oracles'
// evidence: Succeeded when the effect was applied, Retry when it was not.
func (s *scenario) decideLoop(ctx context.Context) {
	for ctx.Err() == nil {
		changed := s.rec.Changed()
		for _, run := range s.rec.All() {
			switch run.Status.Phase {
			case exagentv1.PhaseAwaitingApproval:
				for _, a := range run.Status.Pending() {
					if strings.HasSuffix(run.Name, "3") {
						s.tryDecide(ctx, bob, run, approveSpec(run, a), false)
					}
					s.tryDecide(ctx, alice, run, approveSpec(run, a), true)
				}
			case exagentv1.PhaseUncertain:
				for _, c := range run.Status.UncertainCalls() {
					s.tryDecide(ctx, carol, run, s.resolveSpec(run, c), true)
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-changed:
		case <-time.After(time.Second):
		}
	}
}

func approveSpec(run *exagentv1.AgentRun, a exagentv1.Approval) *fixture.DecisionWrapper {
	return fixture.MakeDecision(fmt.Sprintf("%s-approve-%s-r%d", run.Name, strings.ToLower(a.ID), a.Revision), run.Namespace, run.Name).
		Approve(a).Reason("the fault suite approves")
}

// resolveSpec reads the oracles for the evidence of an Uncertain call.
func (s *scenario) resolveSpec(run *exagentv1.AgentRun, c exagentv1.ToolCall) *fixture.DecisionWrapper {
	var (
		req     Request
		applied bool
	)
	if c.Tool == toolScale {
		req, applied = s.rec.BuiltinApplied(run.UID, c.ID)
	} else {
		req, applied = s.tools.Applied(c.IdempotencyKey)
	}
	outcome, evidence := exagentv1.ResolveRetry, fmt.Sprintf("oracle: no effect of key %s was applied", c.IdempotencyKey)
	if applied {
		outcome = exagentv1.ResolveSucceeded
		evidence = fmt.Sprintf("oracle: %s applied key %s at %s (rv %d)", req.Server, c.IdempotencyKey, stamp(req.At), req.StoreRV)
	}
	return fixture.MakeDecision(fmt.Sprintf("%s-resolve-%s-r%d", run.Name, strings.ToLower(c.ID), run.Status.Revision), run.Namespace, run.Name).
		Resolve(c, run.Status.Revision, outcome, evidence).Reason("the fault suite resolves with the oracle's evidence")
}

// tryDecide creates the decision as user, once; admission stamps the actor.
func (s *scenario) tryDecide(ctx context.Context, user string, run *exagentv1.AgentRun, d *fixture.DecisionWrapper, authorized bool) {
	obj := d.Obj()
	if !authorized {
		obj.Name += "-by-" + user
	}
	name := obj.Name
	s.mu.Lock()
	done := s.made[name]
	s.mu.Unlock()
	if done {
		return
	}
	err := s.cl.users[user].Create(ctx, obj)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err == nil || apierrors.IsAlreadyExists(err):
		s.made[name] = true
		s.decisions = append(s.decisions, Decision{Run: types.NamespacedName{Namespace: s.ns, Name: run.Name},
			Name: name, Kind: obj.Spec.Decision, Actor: user, Authorized: authorized})
		if obj.Spec.Decision == exagentv1.DecisionResolve {
			s.resolved++
		}
	case !authorized && (apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || strings.Contains(err.Error(), "denied")):
		s.made[name] = true
		s.refused++
	}
	// Anything else (admission down, a conflict with a newer revision) is
	// tried again at the next change.
}

// waitDone waits until every run of the scenario ended.
func (s *scenario) waitDone(timeout time.Duration) {
	s.t.Helper()
	err := procs.Poll(timeout, func() (bool, error) {
		for _, name := range s.runNames() {
			if r := s.rec.Latest(name); r == nil || !r.Status.Phase.IsTerminal() {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		var stuck []string
		for _, name := range s.runNames() {
			if r := s.rec.Latest(name); r == nil || !r.Status.Phase.IsTerminal() {
				phase := "unseen"
				if r != nil {
					phase = fmt.Sprintf("%s (%s: %s)", r.Status.Phase, r.Status.Reason, r.Status.Message)
				}
				stuck = append(stuck, name+" "+phase)
			}
		}
		s.t.Logf("seed %d: %d runs not ended within %s: %s", seed(), len(stuck), timeout, strings.Join(first(stuck, 10), "; "))
	}
}

func (s *scenario) runNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.runs...)
}

// history is everything the oracles recorded.
func (s *scenario) history() History {
	s.mu.Lock()
	decisions := append([]Decision(nil), s.decisions...)
	s.mu.Unlock()
	reqs := append(s.tools.Journal(), s.model.Journal()...)
	reqs = append(reqs, s.rec.Builtins()...)
	return History{Runs: s.rec.Runs(), Requests: reqs, Decisions: decisions, Deciders: map[string]bool{alice: true, carol: true}}
}

// verify runs the history check (plus extra, scenario-specific
// violations), prints the scenario's summary line, and fails the test with
// the seed and every offending history.
func (s *scenario) verify(extra ...Violation) History {
	s.t.Helper()
	h := s.history()
	vs := append(Check(h), extra...)
	counts := map[string]int{}
	for _, v := range vs {
		counts[v.Rule]++
	}
	effects := 0
	for _, r := range h.Requests {
		if r.Kind != KindModel && r.Applied {
			effects++
		}
	}
	s.mu.Lock()
	summary := fmt.Sprintf("chaos %s: seed=%d runs=%d kills=%d faults=%d effects=%d duplicates=%d stuck=%d resolved=%d refused-decisions=%d violations=%d",
		s.name, seed(), len(s.runs), s.kills, s.faults, effects, counts[RuleDuplicateEffect], counts[RuleNonTerminal], s.resolved, s.refused, len(vs))
	s.mu.Unlock()
	s.t.Log(summary)
	if gaps := s.rec.Gaps(); len(gaps) > 0 {
		s.t.Logf("the recorder lost history %d times (the check may miss writes): %v", len(gaps), gaps)
	}
	if len(vs) == 0 {
		return h
	}
	sort.SliceStable(vs, func(i, j int) bool { return vs[i].Rule < vs[j].Rule })
	const shown = 15
	var b strings.Builder
	for i, v := range first(vs, shown) {
		fmt.Fprintf(&b, "\n--- violation %d of %d ---\n%s\n", i+1, len(vs), v)
	}
	s.t.Errorf("%s\nrules broken: %v (replay: make chaos SEED=%d)%s", summary, counts, seed(), b.String())
	return h
}

func first[T any](xs []T, n int) []T {
	if len(xs) > n {
		return xs[:n]
	}
	return xs
}

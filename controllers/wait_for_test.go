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
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/fixture"
)

// watcherAgent is an Agent whose model waits once with args, then
// answers "done".
func watcherAgent(args map[string]any) exagentv1.AgentSpec {
	return *fixture.MakeAgent("watcher", "").
		Script(fixture.CallTurn("w1", "waitfor", args), fixture.TextTurn("done")).
		WaitForTool("waitfor", "ConfigMap", "Deployment.apps").
		Policy(exagentv1.PolicySpec{Default: exagentv1.PolicyAllow}).Spec()
}

// readerSA makes ServiceAccount "reader", which may list and watch
// ConfigMaps and Deployments in the harness's namespace, and "nobody",
// which may not.
func (h *harness) readerSA() {
	h.t.Helper()
	for _, o := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: h.ns}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "nobody", Namespace: h.ns}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "watch-things", Namespace: h.ns}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "watch"}},
		}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: h.ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "watch-things"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "reader", Namespace: h.ns}}},
	} {
		if err := h.c.Create(context.Background(), o); err != nil {
			h.t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

// asReader runs as ServiceAccount reader.
func asReader(s *exagentv1.AgentRunSpec) { s.ServiceAccountName = "reader" }

// waitObjectWait waits until run is Waiting on an object with call w1.
func (h *harness) waitObjectWait(run string) *exagentv1.AgentRun {
	h.t.Helper()
	r := h.waitPhase(run, exagentv1.PhaseWaiting)
	c := r.Status.Call("w1")
	if c == nil || c.State != exagentv1.CallStarted || c.Wait == nil || c.Wait.Kind != exagentv1.WaitObject || c.Wait.Object == nil {
		h.t.Fatalf("call w1 = %+v, want Started waiting on an object", c)
	}
	if r.Status.Claim != nil {
		h.t.Errorf("a Waiting run holds a claim: %+v", r.Status.Claim)
	}
	return r
}

// callResult waits until run Succeeded and answers call w1's state and result.
func (h *harness) callResult(run string) (exagentv1.CallState, string) {
	h.t.Helper()
	done := h.waitPhase(run, exagentv1.PhaseSucceeded)
	c := done.Status.Call("w1")
	if c == nil || c.Outcome == nil {
		h.t.Fatalf("call w1 = %+v, want an outcome", c)
	}
	return c.State, c.Outcome.Result
}

// setConfigMap creates or updates ConfigMap name with data ready=value.
func (h *harness) setConfigMap(name, value string) {
	h.t.Helper()
	ctx := context.Background()
	cm := &corev1.ConfigMap{}
	err := h.c.Get(ctx, types.NamespacedName{Namespace: h.ns, Name: name}, cm)
	if err != nil {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns, Labels: map[string]string{"app": "flags"}},
			Data: map[string]string{"ready": value}}
		if err := h.c.Create(ctx, cm); err != nil {
			h.t.Fatalf("creating ConfigMap %s: %v", name, err)
		}
		return
	}
	cm.Data = map[string]string{"ready": value}
	if err := h.c.Update(ctx, cm); err != nil {
		h.t.Fatalf("updating ConfigMap %s: %v", name, err)
	}
}

// cmArgs wait for ConfigMap flag's data.ready to be "yes" (CEL).
func cmArgs(extra map[string]any) map[string]any {
	a := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "flag", "condition": `self.data.ready == "yes"`}
	for k, v := range extra {
		a[k] = v
	}
	return a
}

// TestWaitForCEL: a run waits on a ConfigMap that does not exist yet, as
// its ServiceAccount, with a CEL condition; created not meeting it, the run
// still waits; changed to meet it, the run wakes and its model sees when.
func TestWaitForCEL(t *testing.T) {
	h := newHarness(t)
	h.readerSA()
	h.startManager(controllers.Options{})
	h.createAgent("watcher", watcherAgent(cmArgs(nil)))
	h.createRun("r", "watcher", asReader)
	w := h.waitObjectWait("r")
	if o := w.Status.Call("w1").Wait.Object; o.Namespace != h.ns || o.ServiceAccount != "reader" {
		t.Errorf("object %+v, want namespace %s and ServiceAccount reader", o, h.ns)
	}
	h.setConfigMap("flag", "no")
	// A selector run on the same watch, meeting the condition on its own
	// objects, wakes while r still waits: r's object does not meet it.
	h.createAgent("sel", watcherAgent(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "labelSelector": "app=flags",
		"condition": `has(self.data.ready)`}))
	h.createRun("s", "sel", asReader)
	if state, result := h.callResult("s"); state != exagentv1.CallSucceeded || !strings.Contains(result, "1 ConfigMap in "+h.ns+" with labels app=flags: flag") {
		t.Fatalf("selector call = %s %q", state, result)
	}
	if p := h.get("r").Status.Phase; p != exagentv1.PhaseWaiting {
		t.Fatalf("run r is %s while its ConfigMap says no, want Waiting", p)
	}
	h.setConfigMap("flag", "yes")
	state, result := h.callResult("r")
	want := `condition self.data.ready == "yes" met at `
	if state != exagentv1.CallSucceeded || !strings.HasPrefix(result, want) || !strings.HasSuffix(result, "(ConfigMap "+h.ns+"/flag)") {
		t.Fatalf("call w1 = %s %q, want Succeeded %q… (ConfigMap %s/flag)", state, result, want, h.ns)
	}
}

// TestWaitForDeploymentAvailable: a run waits for a Deployment's
// Available condition, which the test sets (envtest runs no controllers).
func TestWaitForDeploymentAvailable(t *testing.T) {
	h := newHarness(t)
	h.readerSA()
	ctx := context.Background()
	dep := deployment(h.ns, "web")
	if err := h.c.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	h.startManager(controllers.Options{})
	h.createAgent("watcher", watcherAgent(map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "condition": "Available=True"}))
	h.createRun("r", "watcher", asReader)
	h.waitObjectWait("r")
	var got appsv1.Deployment
	if err := h.c.Get(ctx, types.NamespacedName{Namespace: h.ns, Name: "web"}, &got); err != nil {
		t.Fatal(err)
	}
	got.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue,
		Reason: "MinimumReplicasAvailable", LastUpdateTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if err := h.c.Status().Update(ctx, &got); err != nil {
		t.Fatalf("setting the Deployment Available: %v", err)
	}
	state, result := h.callResult("r")
	if state != exagentv1.CallSucceeded || !strings.HasPrefix(result, "condition Available=True met at ") || !strings.Contains(result, "(Deployment "+h.ns+"/web)") {
		t.Fatalf("call w1 = %s %q, want Succeeded: condition Available=True met", state, result)
	}
}

// TestWaitForForbidden: a ServiceAccount that may not list and watch the
// kind is refused before anything waits: the call fails at once with
// "forbidden", and the model goes on.
func TestWaitForForbidden(t *testing.T) {
	h := newHarness(t)
	h.readerSA()
	h.startManager(controllers.Options{})
	h.createAgent("watcher", watcherAgent(cmArgs(nil)))
	h.createRun("r", "watcher", func(s *exagentv1.AgentRunSpec) { s.ServiceAccountName = "nobody" })
	state, result := h.callResult("r")
	if state != exagentv1.CallFailed || !strings.Contains(result, "forbidden") || !strings.Contains(result, "nobody") {
		t.Fatalf("call w1 = %s %q, want Failed: forbidden for ServiceAccount nobody", state, result)
	}
}

// TestWaitForTimeout: a wait whose object never meets the condition ends
// at its timeout (the fake clock), Failed "timed out after", the run goes on.
func TestWaitForTimeout(t *testing.T) {
	h := newHarness(t)
	h.readerSA()
	clk := clocktesting.NewFakeClock(time.Now())
	h.startManager(controllers.Options{Clock: clk})
	h.createAgent("watcher", watcherAgent(cmArgs(map[string]any{"timeout": "10m"})))
	h.createRun("r", "watcher", asReader)
	w := h.waitObjectWait("r")
	c := w.Status.Call("w1")
	if got := c.Wait.Until.Sub(c.Wait.Since.Time); got != 10*time.Minute {
		t.Errorf("the wait lasts %s, want the 10m timeout", got)
	}
	h.poke(clk, c.Wait.Until.Add(time.Second), "r")
	state, result := h.callResult("r")
	if state != exagentv1.CallFailed || !strings.HasPrefix(result, "timed out after 10m1s") {
		t.Fatalf("call w1 = %s %q, want Failed: timed out after 10m1s", state, result)
	}
}

// TestWaitForSurvivesARestart: the manager stops while a run waits on an
// object; a new one, with nothing in memory, registers the watch again
// from the journal and wakes the run when the object changes.
func TestWaitForSurvivesARestart(t *testing.T) {
	h := newHarness(t)
	h.readerSA()
	h.setConfigMap("flag", "no")
	first := h.startManagerNoCleanup(controllers.Options{})
	h.createAgent("watcher", watcherAgent(cmArgs(nil)))
	h.createRun("r", "watcher", asReader)
	h.waitObjectWait("r")
	first.stop()
	h.startManager(controllers.Options{})
	h.setConfigMap("flag", "yes")
	if state, result := h.callResult("r"); state != exagentv1.CallSucceeded || !strings.Contains(result, "met at") {
		t.Fatalf("call w1 = %s %q, want Succeeded after the restart", state, result)
	}
}

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
	"encoding/json"
	"strings"
	"testing"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// waitForEnv: a WaitFor tool on Deployments and ConfigMaps, allowed, in a
// run of namespace ns acting as ServiceAccount sa.
func waitForEnv(t *testing.T, maxWait string) *Env {
	t.Helper()
	a := MakeAgent().WaitForTool("waitfor", "Deployment.apps", "ConfigMap").Rule("wait-ok", exagentv1.PolicyAllow, "", "waitfor")
	if maxWait != "" {
		a = a.MaxWait(exagentv1.Duration(maxWait))
	}
	run := MakeRun().Spec()
	run.ServiceAccountName = "sa"
	env, err := NewEnv(EnvInput{RunUID: runUID, RunName: "run", RunNamespace: "ns", Agent: a.Spec(), AgentGeneration: 1, Run: run})
	if err != nil {
		t.Fatalf("NewEnv: %v", err)
	}
	return env
}

// waitForCall is a model answer calling WaitFor with args.
func waitForCall(t *testing.T, id string, args map[string]any) exagentv1.MessageToolCall {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return call(id, "waitfor", string(b))
}

// deploymentArgs are the arguments of a wait for Deployment web to be
// Available, with changes.
func deploymentArgs(change func(map[string]any)) map[string]any {
	a := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "condition": "Available=True"}
	if change != nil {
		change(a)
	}
	return a
}

// TestWaitForBegins: a valid WaitFor call journals its object — the run's
// namespace and ServiceAccount filled in — and the run goes Waiting until
// its timeout (limits.maxWait without one); an invalid one is a failed
// call the model sees, and nothing waits.
func TestWaitForBegins(t *testing.T) {
	cases := map[string]struct {
		maxWait string
		change  func(map[string]any)
		until   time.Duration // from the step; 0: the call fails
		fails   string
	}{
		"by name, no timeout": {until: 24 * time.Hour},
		"timeout":             {change: func(a map[string]any) { a["timeout"] = "10m" }, until: 10 * time.Minute},
		"the run's namespace": {change: func(a map[string]any) { a["namespace"] = "ns" }, until: 24 * time.Hour},
		"selector, kstatus": {change: func(a map[string]any) {
			delete(a, "name")
			a["labelSelector"] = "app=web,tier!=db"
			a["condition"] = "Current"
		}, until: 24 * time.Hour},
		"CEL on a ConfigMap": {change: func(a map[string]any) {
			a["apiVersion"], a["kind"], a["condition"] = "v1", "ConfigMap", `self.data.ready == "yes"`
		}, until: 24 * time.Hour},
		"maxWait bounds":            {maxWait: "1h", until: time.Hour},
		"timeout over maxWait":      {maxWait: "1h", change: func(a map[string]any) { a["timeout"] = "2h" }, fails: "limits.maxWait 1h0m0s"},
		"bad timeout":               {change: func(a map[string]any) { a["timeout"] = "soon" }, fails: "not a duration"},
		"another namespace":         {change: func(a map[string]any) { a["namespace"] = "kube-system" }, fails: "run's namespace only"},
		"kind not the tool's":       {change: func(a map[string]any) { a["kind"] = "StatefulSet" }, fails: "not one this tool may wait on"},
		"group not the tool's":      {change: func(a map[string]any) { a["apiVersion"] = "v1" }, fails: "not one this tool may wait on"},
		"a Secret":                  {change: func(a map[string]any) { a["apiVersion"], a["kind"] = "v1", "Secret" }, fails: "never waits on Secrets"},
		"bad apiVersion":            {change: func(a map[string]any) { a["apiVersion"] = "a/b/c" }, fails: "not group/version"},
		"neither name nor selector": {change: func(a map[string]any) { delete(a, "name") }, fails: "name or labelSelector is required"},
		"both":                      {change: func(a map[string]any) { a["labelSelector"] = "app=web" }, fails: "not both"},
		"bad selector":              {change: func(a map[string]any) { delete(a, "name"); a["labelSelector"] = "app in (" }, fails: "does not parse"},
		"bad name":                  {change: func(a map[string]any) { a["name"] = "Web_1" }, fails: "not an object name"},
		"bad CEL":                   {change: func(a map[string]any) { a["condition"] = "self.status.(" }, fails: "neither Type=Status"},
		"CEL not a bool":            {change: func(a map[string]any) { a["condition"] = `"yes"` }, fails: "not a bool"},
		"bad status word":           {change: func(a map[string]any) { a["condition"] = "Available=Yes" }, fails: "neither Type=Status"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, waitForEnv(t, tc.maxWait)).claim(w1)
			h.step()
			h.advance(time.Second)
			h.respond(tools(waitForCall(t, "w1", deploymentArgs(tc.change))))
			act := h.step()
			c := h.s.Calls[findCall(&h.s, "w1")]
			if tc.fails != "" {
				if c.State != exagentv1.CallFailed || c.Outcome == nil || !strings.Contains(c.Outcome.Result, tc.fails) || c.Wait != nil {
					t.Fatalf("call %s %+v wait %+v, want Failed with %q and no wait", c.State, c.Outcome, c.Wait, tc.fails)
				}
				if act.Kind != ActCallModel {
					t.Fatalf("after a failed WaitFor: %s, want the next model request", act.Kind)
				}
				return
			}
			now := t0.Add(time.Second)
			if act.Kind != ActWaitUntil || !act.WakeAt.Equal(now.Add(tc.until)) || h.s.Phase != exagentv1.PhaseWaiting {
				t.Fatalf("action %s wake at %s phase %s, want WaitUntil %s", act.Kind, act.WakeAt, h.s.Phase, now.Add(tc.until))
			}
			w := c.Wait
			if c.State != exagentv1.CallStarted || w == nil || w.Kind != exagentv1.WaitObject || w.Object == nil {
				t.Fatalf("call %s wait %+v, want Started waiting on an object", c.State, w)
			}
			if w.Object.Namespace != "ns" || w.Object.ServiceAccount != "sa" {
				t.Fatalf("object %+v, want namespace ns and ServiceAccount sa", w.Object)
			}
			if !strings.Contains(h.s.Message, "for "+w.Object.Kind) {
				t.Fatalf("message %q does not say what the call waits for", h.s.Message)
			}
		})
	}
}

// TestObserveWait: an observation closes the call — met, Succeeded with
// the condition and when; a problem, Failed with it — and the run is
// Queued (Woken) once nothing waits; not yet met, or past the deadline,
// changes nothing; the timeout closes it through Wake.
func TestObserveWait(t *testing.T) {
	env := waitForEnv(t, "")
	h := newHarness(t, env).claim(w1)
	h.step()
	h.advance(time.Second)
	h.respond(tools(waitForCall(t, "w1", deploymentArgs(func(a map[string]any) { a["timeout"] = "10m" }))))
	h.step()
	waitingRun := h.s
	at := t0.Add(time.Minute)
	cases := map[string]struct {
		obs     WaitObservation
		at      time.Time
		call    string
		changed bool
		state   exagentv1.CallState
		result  string
	}{
		"met": {obs: WaitObservation{Met: true, Detail: "Deployment ns/web"}, at: at, call: "w1", changed: true,
			state: exagentv1.CallSucceeded, result: "condition Available=True met at " + at.UTC().Format(time.RFC3339) + " (Deployment ns/web)"},
		"forbidden": {obs: WaitObservation{Problem: "forbidden: ServiceAccount ns/sa may not list deployments"}, at: at, call: "w1", changed: true,
			state: exagentv1.CallFailed, result: "stopped waiting at " + at.UTC().Format(time.RFC3339) + " for Deployment ns/web to be Available=True: forbidden"},
		"not yet":      {obs: WaitObservation{}, at: at, call: "w1"},
		"another call": {obs: WaitObservation{Met: true}, at: at, call: "nope"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			next, changed, err := ObserveWait(waitingRun, env, tc.call, tc.obs, tc.at)
			if err != nil || changed != tc.changed {
				t.Fatalf("ObserveWait: changed %v err %v, want %v", changed, err, tc.changed)
			}
			if !changed {
				if next.Phase != exagentv1.PhaseWaiting {
					t.Fatalf("an observation that closes nothing moved the run to %s", next.Phase)
				}
				return
			}
			c := next.Calls[findCall(&next, tc.call)]
			if c.State != tc.state || c.Outcome == nil || !strings.HasPrefix(c.Outcome.Result, tc.result) {
				t.Fatalf("call %s %+v, want %s %q", c.State, c.Outcome, tc.state, tc.result)
			}
			if next.Phase != exagentv1.PhaseQueued || next.Reason != exagentv1.ReasonWoken {
				t.Fatalf("phase %s reason %s, want Queued Woken", next.Phase, next.Reason)
			}
			if err := validateContinuation(&next); err != nil {
				t.Fatalf("integrity: %v", err)
			}
		})
	}
	t.Run("timeout", func(t *testing.T) {
		until := waitingRun.Calls[findCall(&waitingRun, "w1")].Wait.Until.Time
		next, changed, err := Wake(waitingRun, env, until)
		if err != nil || !changed {
			t.Fatalf("Wake at the timeout: changed %v err %v", changed, err)
		}
		if got := outcomeOf(t, next, "w1"); !strings.HasPrefix(got, "timed out after 10m0s") || !strings.Contains(got, "Deployment ns/web to be Available=True") {
			t.Fatalf("result %q, want timed out after 10m0s waiting for the Deployment", got)
		}
	})
	t.Run("deadline is Expire's", func(t *testing.T) {
		denv := mustEnvNS(t, env, MakeRun().Deadline(t0.Add(30*time.Second)).Spec())
		if _, changed, _ := ObserveWait(waitingRun, denv, "w1", WaitObservation{Met: true}, at); changed {
			t.Fatal("ObserveWait past the deadline changed the run")
		}
	})
	t.Run("not Waiting", func(t *testing.T) {
		s := clone(waitingRun)
		s.Phase = exagentv1.PhaseQueued
		if _, changed, _ := ObserveWait(s, env, "w1", WaitObservation{Met: true}, at); changed {
			t.Fatal("ObserveWait of a Queued run changed it")
		}
	})
}

// mustEnvNS is env's Agent with another run spec.
func mustEnvNS(t *testing.T, env *Env, run *exagentv1.AgentRunSpec) *Env {
	t.Helper()
	e, err := NewEnv(EnvInput{RunUID: runUID, RunName: "run", RunNamespace: "ns", Agent: env.in.Agent, AgentGeneration: 1, Run: run})
	if err != nil {
		t.Fatalf("NewEnv: %v", err)
	}
	return e
}

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
	"fmt"
	"strings"
	"testing"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// testIssuer makes URLs whose token names what it covers, so a test sees
// that the engine passes the right run, id and expiry.
var testIssuer = &CallbackIssuer{BaseURL: "https://cb.example:9444/", Token: func(runUID, id string, exp time.Time) string {
	return fmt.Sprintf("%s.%s.%d", runUID, id, exp.Unix())
}}

// callbackEnv: NewCallback "mk" and WaitForCallback "wait", both allowed.
func callbackEnv(t *testing.T, issuer *CallbackIssuer, run *exagentv1.AgentRunSpec) *Env {
	t.Helper()
	agent := MakeAgent().NewCallbackTool("mk").WaitForCallbackTool("wait").
		Rule("ok", exagentv1.PolicyAllow, "", "mk", "wait").Spec()
	env, err := NewEnv(EnvInput{RunUID: runUID, RunName: "run", RunNamespace: "team-a", Agent: agent, AgentGeneration: 1,
		Run: run, Callbacks: issuer})
	if err != nil {
		t.Fatalf("NewEnv: %v", err)
	}
	return env
}

func waitFor(id, callback, extra string) exagentv1.MessageToolCall {
	return call(id, "wait", `{"callback":"`+callback+`"`+extra+`}`)
}

// TestNewCallback: an allowed NewCallback closes at once with the id, the
// URL (base, namespace, run UID, id, token over them and the expiry) and
// the expiry, limits.maxWait from now and never past the deadline; it is
// journaled once; without a listener, or past 16 callbacks, the model is
// told why.
func TestNewCallback(t *testing.T) {
	now := t0.Add(time.Second)
	cases := map[string]struct {
		issuer   *CallbackIssuer
		deadline time.Time
		made     int // callbacks made before
		expires  time.Time
		fails    string
	}{
		"made":             {issuer: testIssuer, expires: now.Add(24 * time.Hour)},
		"cut at deadline":  {issuer: testIssuer, deadline: t0.Add(90 * time.Minute), expires: t0.Add(90 * time.Minute)},
		"no listener":      {fails: "serves no callback listener"},
		"the 16th":         {issuer: testIssuer, made: MaxCallbacks - 1, expires: now.Add(24 * time.Hour)},
		"the 17th refused": {issuer: testIssuer, made: MaxCallbacks, fails: "made 16 callbacks already"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			run := MakeRun()
			if !tc.deadline.IsZero() {
				run = run.Deadline(tc.deadline)
			}
			h := newHarness(t, callbackEnv(t, tc.issuer, run.Spec())).claim(w1)
			for i := range tc.made {
				h.s.Callbacks = append(h.s.Callbacks, exagentv1.RunCallback{ID: fmt.Sprintf("cb-old-%d", i), CallID: "old",
					CreatedAt: microTime(t0), ExpiresAt: microTime(t0.Add(time.Hour))})
			}
			h.step()
			h.advance(time.Second)
			h.respond(tools(call("m1", "mk", `{}`)))
			act := h.step()
			if act.Kind != ActCallModel {
				t.Fatalf("action %s, want the next model request at once", act.Kind)
			}
			c := h.s.Calls[findCall(&h.s, "m1")]
			if tc.fails != "" {
				if c.State != exagentv1.CallFailed || !strings.Contains(c.Outcome.Result, tc.fails) {
					t.Fatalf("call %s %+v, want Failed with %q", c.State, c.Outcome, tc.fails)
				}
				if len(h.s.Callbacks) != tc.made {
					t.Fatalf("callbacks %d, want %d", len(h.s.Callbacks), tc.made)
				}
				return
			}
			var got struct{ Callback, URL, ExpiresAt string }
			if c.State != exagentv1.CallSucceeded || json.Unmarshal([]byte(c.Outcome.Result), &got) != nil {
				t.Fatalf("call %s %+v, want Succeeded with a JSON result", c.State, c.Outcome)
			}
			id := CallbackID("m1")
			wantURL := fmt.Sprintf("https://cb.example:9444/callbacks/team-a/%s/%s?token=%s.%s.%d", runUID, id, runUID, id, tc.expires.Unix())
			if got.Callback != id || got.URL != wantURL || got.ExpiresAt != tc.expires.Format(time.RFC3339) {
				t.Fatalf("result %+v, want %s %s %s", got, id, wantURL, tc.expires.Format(time.RFC3339))
			}
			cb := findCallback(&h.s, id)
			if cb == nil || cb.CallID != "m1" || !cb.CreatedAt.Time.Equal(now) || !cb.ExpiresAt.Time.Equal(tc.expires) || len(h.s.Callbacks) != tc.made+1 {
				t.Fatalf("status.callbacks %+v", h.s.Callbacks)
			}
			if err := validateContinuation(&h.s); err != nil {
				t.Fatalf("integrity: %v", err)
			}
		})
	}
}

// madeCallback is a harness whose run made callback id (call m1) and is
// at its next model request.
func madeCallback(t *testing.T, run *exagentv1.AgentRunSpec) (*harness, string) {
	t.Helper()
	h := newHarness(t, callbackEnv(t, testIssuer, run)).claim(w1)
	h.step()
	h.respond(tools(call("m1", "mk", `{}`)))
	if act := h.step(); act.Kind != ActCallModel {
		t.Fatalf("after NewCallback: %s", act.Kind)
	}
	return h, CallbackID("m1")
}

// TestDeliverCallback: the first valid POST closes the call that waits
// for it (the body is its result) and queues the run; one before the wait
// is kept and consumed when it begins; the rest is refused, typed, and
// changes nothing.
func TestDeliverCallback(t *testing.T) {
	body := []byte(`{"status": "done", "n": 1}`)
	canon := `{"n":1,"status":"done"}`
	schema := `,"schema":{"type":"object","required":["status"],"properties":{"status":{"enum":["done"]}}}`

	t.Run("after the wait began", func(t *testing.T) {
		h, id := madeCallback(t, MakeRun().Spec())
		h.respond(tools(waitFor("w1", id, `,"timeout":"1h"`+schema)))
		if act := h.step(); act.Kind != ActWaitUntil || h.s.Phase != exagentv1.PhaseWaiting {
			t.Fatalf("action %s phase %s, want Waiting", act.Kind, h.s.Phase)
		}
		if w := h.s.Calls[findCall(&h.s, "w1")].Wait; w.Kind != exagentv1.WaitCallback || w.Callback != id {
			t.Fatalf("wait %+v", w)
		}
		at := h.now.Add(time.Minute)
		if _, err := DeliverCallback(h.s, h.env, id, []byte(`{"status":"nope"}`), at); refusal(err) != CallbackInvalid {
			t.Fatalf("a body off the schema: %v, want Invalid", err)
		}
		s, err := DeliverCallback(h.s, h.env, id, body, at)
		if err != nil {
			t.Fatalf("DeliverCallback: %v", err)
		}
		if got := outcomeOf(t, s, "w1"); got != canon || s.Calls[findCall(&s, "w1")].State != exagentv1.CallSucceeded {
			t.Fatalf("result %q, want the body %s", got, canon)
		}
		if s.Phase != exagentv1.PhaseQueued || s.Reason != exagentv1.ReasonWoken {
			t.Fatalf("phase %s reason %s, want Queued Woken", s.Phase, s.Reason)
		}
		cb := findCallback(&s, id)
		if cb.ReceivedAt == nil || !cb.ReceivedAt.Time.Equal(at) || cb.ConsumedBy != "w1" {
			t.Fatalf("callback %+v", cb)
		}
		if _, err := DeliverCallback(s, h.env, id, body, at); refusal(err) != CallbackReceived {
			t.Fatalf("a second POST: %v, want Received", err)
		}
		h.s, h.now = s, at
		h.claim("worker-2")
		act := h.step()
		if last := act.Model.Messages[len(act.Model.Messages)-1]; act.Kind != ActCallModel || last.Content != canon {
			t.Fatalf("the model sees %s %+v", act.Kind, last)
		}
	})

	t.Run("before the wait began", func(t *testing.T) {
		h, id := madeCallback(t, MakeRun().Spec())
		s, err := DeliverCallback(h.s, h.env, id, body, h.now)
		if err != nil {
			t.Fatalf("DeliverCallback: %v", err)
		}
		if s.Phase != exagentv1.PhaseRunning || findCallback(&s, id).Body != canon {
			t.Fatalf("phase %s callbacks %+v, want the body kept", s.Phase, s.Callbacks)
		}
		h.s = s
		h.respond(tools(waitFor("w1", id, schema)))
		if act := h.step(); act.Kind != ActCallModel {
			t.Fatalf("action %s, want the next model request at once", act.Kind)
		}
		if got := outcomeOf(t, h.s, "w1"); got != canon {
			t.Fatalf("result %q, want the kept body", got)
		}
		if cb := findCallback(&h.s, id); cb.ConsumedBy != "w1" || cb.Body != "" {
			t.Fatalf("callback %+v, want consumed by w1, the body moved to the result", cb)
		}
		h.respond(tools(waitFor("w2", id, "")))
		h.step()
		if c := h.s.Calls[findCall(&h.s, "w2")]; c.State != exagentv1.CallFailed || !strings.Contains(c.Outcome.Result, "received already") {
			t.Fatalf("waiting again: %s %+v", c.State, c.Outcome)
		}
	})

	t.Run("kept body off the schema", func(t *testing.T) {
		h, id := madeCallback(t, MakeRun().Spec())
		s, err := DeliverCallback(h.s, h.env, id, []byte(`{"status":"nope"}`), h.now)
		if err != nil {
			t.Fatalf("DeliverCallback: %v", err)
		}
		h.s = s
		h.respond(tools(waitFor("w1", id, schema)))
		h.step()
		if c := h.s.Calls[findCall(&h.s, "w1")]; c.State != exagentv1.CallFailed || !strings.Contains(c.Outcome.Result, "does not match the schema") {
			t.Fatalf("call %s %+v", c.State, c.Outcome)
		}
	})

	t.Run("timeout", func(t *testing.T) {
		h, id := madeCallback(t, MakeRun().Spec())
		h.respond(tools(waitFor("w1", id, `,"timeout":"10m"`)))
		h.step()
		s, changed, err := Wake(h.s, h.env, h.now.Add(10*time.Minute))
		if err != nil || !changed || s.Phase != exagentv1.PhaseQueued {
			t.Fatalf("Wake: %v %v %s", changed, err, s.Phase)
		}
		if got := outcomeOf(t, s, "w1"); !strings.HasPrefix(got, "timed out after 10m0s") || !strings.Contains(got, "callback "+id) {
			t.Fatalf("result %q", got)
		}
		// A POST after the timeout but before the expiry is kept.
		if s, err = DeliverCallback(s, h.env, id, body, h.now.Add(11*time.Minute)); err != nil || findCallback(&s, id).Body != canon {
			t.Fatalf("DeliverCallback after the timeout: %v", err)
		}
	})

	t.Run("a wait lasts until the callback expires at most", func(t *testing.T) {
		h, id := madeCallback(t, MakeRun().Spec())
		h.advance(10 * time.Second)
		h.respond(tools(waitFor("w1", id, "")))
		h.step()
		w := h.s.Calls[findCall(&h.s, "w1")].Wait
		if exp := findCallback(&h.s, id).ExpiresAt; !w.Until.Equal(&exp) {
			t.Fatalf("until %s, want the expiry %s", w.Until, exp)
		}
	})

	refusals := map[string]struct {
		mutate func(h *harness, id string) (Status, string, []byte, time.Time)
		want   CallbackRefusal
	}{
		"unknown id": {want: CallbackUnknown, mutate: func(h *harness, id string) (Status, string, []byte, time.Time) {
			return h.s, "cb-nope", body, h.now
		}},
		"expired": {want: CallbackExpired, mutate: func(h *harness, id string) (Status, string, []byte, time.Time) {
			return h.s, id, body, findCallback(&h.s, id).ExpiresAt.Time
		}},
		"not JSON": {want: CallbackInvalid, mutate: func(h *harness, id string) (Status, string, []byte, time.Time) {
			return h.s, id, []byte(`{"a":`), h.now
		}},
		"too large": {want: CallbackTooLarge, mutate: func(h *harness, id string) (Status, string, []byte, time.Time) {
			return h.s, id, []byte(`"` + strings.Repeat("x", MaxCallbackBody) + `"`), h.now
		}},
		"ended run": {want: CallbackRunEnded, mutate: func(h *harness, id string) (Status, string, []byte, time.Time) {
			s := clone(h.s)
			s.Phase = exagentv1.PhaseCancelled
			return s, id, body, h.now
		}},
	}
	for name, tc := range refusals {
		t.Run(name, func(t *testing.T) {
			h, id := madeCallback(t, MakeRun().Spec())
			s, cbID, b, at := tc.mutate(h, id)
			next, err := DeliverCallback(s, h.env, cbID, b, at)
			if got := refusal(err); got != tc.want {
				t.Fatalf("refusal %q (%v), want %q", got, err, tc.want)
			}
			if findCallback(&next, id).ReceivedAt != nil {
				t.Fatalf("a refused POST was recorded: %+v", next.Callbacks)
			}
		})
	}

	waitRefusals := map[string]struct {
		args string // after the callback
		id   string // "": the run's
		want string
	}{
		"not the run's":   {id: "cb-other", want: "not one of this run's"},
		"bad timeout":     {args: `,"timeout":"soon"`, want: "not a duration"},
		"over maxWait":    {args: `,"timeout":"48h"`, want: "limits.maxWait"},
		"unusable schema": {args: `,"schema":{"type":"nonsense"}`, want: "not a usable JSON Schema"},
	}
	for name, tc := range waitRefusals {
		t.Run("WaitForCallback "+name, func(t *testing.T) {
			h, id := madeCallback(t, MakeRun().Spec())
			if tc.id != "" {
				id = tc.id
			}
			h.respond(tools(waitFor("w1", id, tc.args)))
			if act := h.step(); act.Kind != ActCallModel {
				t.Fatalf("action %s, want the next model request", act.Kind)
			}
			if c := h.s.Calls[findCall(&h.s, "w1")]; c.State != exagentv1.CallFailed || !strings.Contains(c.Outcome.Result, tc.want) {
				t.Fatalf("call %s %+v, want Failed with %q", c.State, c.Outcome, tc.want)
			}
		})
	}
}

func refusal(err error) CallbackRefusal {
	if ce, ok := AsCallbackError(err); ok {
		return ce.Refusal
	}
	return ""
}

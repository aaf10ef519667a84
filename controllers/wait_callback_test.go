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
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/authz"
	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/testing/fixture"
	"github.com/exagent-io/exagent/loop"
)

const callbackBase = "https://callbacks.example"

// callbacker is an Agent whose model makes a callback (call mk), plays
// the turns between, then answers "done".
func callbacker(between ...exagentv1.ScriptTurn) exagentv1.AgentSpec {
	turns := append([]exagentv1.ScriptTurn{fixture.CallTurn("mk", "mk", map[string]any{})}, between...)
	turns = append(turns, fixture.TextTurn("done"))
	return *fixture.MakeAgent("callbacker", "").Script(turns...).
		NewCallbackTool("mk").WaitForCallbackTool("wait").SleepTool("nap").
		Policy(exagentv1.PolicySpec{Default: exagentv1.PolicyAllow}).Spec()
}

// waitTurn is the model's WaitForCallback on mk's callback: the scripted
// model cannot read the URL's result, but the id is a function of the call.
func waitTurn(args map[string]any) exagentv1.ScriptTurn {
	a := map[string]any{"callback": loop.CallbackID("mk")}
	for k, v := range args {
		a[k] = v
	}
	return fixture.CallTurn("w", "wait", a)
}

// callbackManager starts a manager that makes callback URLs and serves
// them on a real HTTP server (the trigger listener's handler).
func callbackManager(t *testing.T, h *harness, clk *clocktesting.FakeClock) *httptest.Server {
	t.Helper()
	signer, err := authz.NewSigner(bytes.Repeat([]byte{9}, 32))
	if err != nil {
		t.Fatal(err)
	}
	m := h.startManager(controllers.Options{Clock: clk, Signer: signer, CallbackBaseURL: callbackBase})
	if m.ctrls.Callbacks == nil {
		t.Fatal("no callback handler although a base URL and a signer are set")
	}
	srv := httptest.NewServer(m.ctrls.Callbacks)
	t.Cleanup(srv.Close)
	return srv
}

// callbackURL is the URL call mk of run returned, on srv.
func (h *harness) callbackURL(srv *httptest.Server, run string) string {
	h.t.Helper()
	var c *exagentv1.ToolCall
	if !eventually(func() bool {
		c = h.get(run).Status.Call("mk")
		return c != nil && c.State == exagentv1.CallSucceeded
	}) {
		h.t.Fatalf("call mk of run %s did not succeed: %+v", run, c)
	}
	var res struct{ Callback, URL string }
	if err := json.Unmarshal([]byte(c.Outcome.Result), &res); err != nil || !strings.HasPrefix(res.URL, callbackBase+"/callbacks/"+h.ns+"/") {
		h.t.Fatalf("NewCallback result %q (%v)", c.Outcome.Result, err)
	}
	if res.Callback != loop.CallbackID("mk") {
		h.t.Fatalf("callback id %q, want %q", res.Callback, loop.CallbackID("mk"))
	}
	return srv.URL + strings.TrimPrefix(res.URL, callbackBase)
}

// post POSTs body to url and returns the status code.
func post(t *testing.T, url, body string) int {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	return resp.StatusCode
}

// TestCallbackAfterTheWait: the model makes a callback and waits on it;
// a forged token (401) and an oversized body (413) change nothing; the
// first valid POST (202) becomes the wait's result and the run finishes;
// a second POST is refused (409).
func TestCallbackAfterTheWait(t *testing.T) {
	h := newHarness(t)
	clk := clocktesting.NewFakeClock(time.Now())
	srv := callbackManager(t, h, clk)
	h.createAgent("callbacker", callbacker(waitTurn(map[string]any{"timeout": "1h"})))
	h.createRun("r", "callbacker")
	url := h.callbackURL(srv, "r")
	w := h.waitPhase("r", exagentv1.PhaseWaiting)
	if c := w.Status.Call("w"); c == nil || c.Wait == nil || c.Wait.Kind != exagentv1.WaitCallback || c.Wait.Callback != loop.CallbackID("mk") {
		t.Fatalf("call w = %+v, want a Callback wait", c)
	}

	forged := url[:strings.Index(url, "token=")+len("token=")] + "1999999999.AAAA"
	if code := post(t, forged, `{"ok":true}`); code != http.StatusUnauthorized {
		t.Fatalf("forged token: %d, want 401", code)
	}
	other := strings.Replace(url, string(w.UID), "00000000-0000-0000-0000-000000000000", 1)
	if code := post(t, other, `{"ok":true}`); code != http.StatusUnauthorized {
		t.Fatalf("another run's UID under the token: %d, want 401", code)
	}
	if code := post(t, url, `"`+strings.Repeat("x", loop.MaxCallbackBody)+`"`); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized body: %d, want 413", code)
	}
	if code := post(t, url, `{"ok":`); code != http.StatusBadRequest {
		t.Fatalf("not JSON: %d, want 400", code)
	}
	if r := h.get("r"); r.Status.Phase != exagentv1.PhaseWaiting || r.Status.Callbacks[0].ReceivedAt != nil {
		t.Fatalf("a refused POST changed the run: %s %+v", r.Status.Phase, r.Status.Callbacks)
	}

	if code := post(t, url, `{"ticket": "OPS-1", "state": "closed"}`); code != http.StatusAccepted {
		t.Fatalf("POST: %d, want 202", code)
	}
	done := h.waitPhase("r", exagentv1.PhaseSucceeded)
	if c := done.Status.Call("w"); c.State != exagentv1.CallSucceeded || c.Outcome.Result != `{"state":"closed","ticket":"OPS-1"}` {
		t.Fatalf("call w = %s %+v, want the body as its result", c.State, c.Outcome)
	}
	if code := post(t, url, `{"again":true}`); code != http.StatusNotFound && code != http.StatusConflict {
		t.Fatalf("second POST: %d, want 409 (or 404: the run ended)", code)
	}
}

// TestCallbackBeforeTheWait: a POST that arrives before the model waits
// (it sleeps first) is kept, and the wait that follows receives it at
// once; a second POST is refused (409) while the run lives.
func TestCallbackBeforeTheWait(t *testing.T) {
	h := newHarness(t)
	clk := clocktesting.NewFakeClock(time.Now())
	srv := callbackManager(t, h, clk)
	h.createAgent("callbacker", callbacker(fixture.CallTurn("nap", "nap", map[string]any{"duration": "1h"}),
		waitTurn(map[string]any{"schema": map[string]any{"type": "object", "required": []string{"state"}}})))
	h.createRun("r", "callbacker")
	url := h.callbackURL(srv, "r")
	w := h.waitPhase("r", exagentv1.PhaseWaiting)
	if code := post(t, url, `{"state":"closed"}`); code != http.StatusAccepted {
		t.Fatalf("POST: %d, want 202", code)
	}
	if code := post(t, url, `{"state":"again"}`); code != http.StatusConflict {
		t.Fatalf("second POST: %d, want 409", code)
	}
	if r := h.get("r"); r.Status.Phase != exagentv1.PhaseWaiting || r.Status.Callbacks[0].Body != `{"state":"closed"}` {
		t.Fatalf("run %s callbacks %+v, want still sleeping with the body kept", r.Status.Phase, r.Status.Callbacks)
	}
	h.poke(clk, w.Status.Call("nap").Wait.Until.Add(time.Second), "r")
	done := h.waitPhase("r", exagentv1.PhaseSucceeded)
	if c := done.Status.Call("w"); c.State != exagentv1.CallSucceeded || c.Outcome.Result != `{"state":"closed"}` {
		t.Fatalf("call w = %s %+v, want the kept body", c.State, c.Outcome)
	}
}

// TestCallbackTimeout: nothing is POSTed; at the timeout the model is told
// and the run goes on.
func TestCallbackTimeout(t *testing.T) {
	h := newHarness(t)
	clk := clocktesting.NewFakeClock(time.Now())
	callbackManager(t, h, clk)
	h.createAgent("callbacker", callbacker(waitTurn(map[string]any{"timeout": "10m"})))
	h.createRun("r", "callbacker")
	w := h.waitPhase("r", exagentv1.PhaseWaiting)
	h.poke(clk, w.Status.Call("w").Wait.Until.Add(time.Second), "r")
	done := h.waitPhase("r", exagentv1.PhaseSucceeded)
	if c := done.Status.Call("w"); c.State != exagentv1.CallFailed || !strings.Contains(c.Outcome.Result, "timed out after") {
		t.Fatalf("call w = %s %+v, want Failed \"timed out after …\"", c.State, c.Outcome)
	}
}

// TestCallbackWithoutAListener: a manager with no callback base URL makes
// no URL: the model is told, the run goes on.
func TestCallbackWithoutAListener(t *testing.T) {
	h := newHarness(t)
	h.startManager(controllers.Options{})
	h.createAgent("callbacker", callbacker())
	h.createRun("r", "callbacker")
	done := h.waitPhase("r", exagentv1.PhaseSucceeded)
	if c := done.Status.Call("mk"); c.State != exagentv1.CallFailed || !strings.Contains(c.Outcome.Result, "serves no callback listener") {
		t.Fatalf("call mk = %s %+v", c.State, c.Outcome)
	}
}

// TestCallbackAcrossARestart: the manager that made the callback stops
// while the run waits on it; a new one, with nothing in memory but the
// same signing key, accepts the POST and wakes the run. A POST after the
// URL's expiry is refused (410) and changes nothing.
func TestCallbackAcrossARestart(t *testing.T) {
	h := newHarness(t)
	clk := clocktesting.NewFakeClock(time.Now())
	signer, err := authz.NewSigner(bytes.Repeat([]byte{9}, 32))
	if err != nil {
		t.Fatal(err)
	}
	t0 := clk.Now()
	first := h.startManagerNoCleanup(controllers.Options{Clock: clk, Signer: signer, CallbackBaseURL: callbackBase})
	srv1 := httptest.NewServer(first.ctrls.Callbacks)
	h.createAgent("callbacker", callbacker(waitTurn(map[string]any{"timeout": "2h"})))
	h.createRun("r", "callbacker")
	path := strings.TrimPrefix(h.callbackURL(srv1, "r"), srv1.URL)
	h.waitPhase("r", exagentv1.PhaseWaiting)
	srv1.Close()
	first.stop()

	srv := callbackManager(t, h, clk)
	expires := h.get("r").Status.Callbacks[0].ExpiresAt.Time
	clk.SetTime(expires.Add(time.Second))
	if code := post(t, srv.URL+path, `{"late":true}`); code != http.StatusGone {
		t.Fatalf("POST past the expiry: %d, want 410", code)
	}
	if r := h.get("r"); r.Status.Phase != exagentv1.PhaseWaiting || r.Status.Callbacks[0].ReceivedAt != nil {
		t.Fatalf("an expired POST changed the run: %s %+v", r.Status.Phase, r.Status.Callbacks)
	}
	clk.SetTime(t0.Add(time.Minute)) // back before the wait's timeout (2h): a fake clock may
	if code := post(t, srv.URL+path, `{"state":"closed"}`); code != http.StatusAccepted {
		t.Fatalf("POST to the new manager: %d, want 202", code)
	}
	done := h.waitPhase("r", exagentv1.PhaseSucceeded)
	if c := done.Status.Call("w"); c.State != exagentv1.CallSucceeded || c.Outcome.Result != `{"state":"closed"}` {
		t.Fatalf("call w = %s %+v, want the body", c.State, c.Outcome)
	}
}

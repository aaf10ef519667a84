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
	"errors"
	"fmt"
	"strings"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// Waits (docs/waits.md, docs/architecture.md §17). A call of a builtin Sleep tool
// touches nothing: once the policy allows it (an Ask rule pauses it like
// any call), beginning it journals a wait — state Started with wait {kind
// Timer, since, until} — instead of IO. A waiting call is not in flight
// (inFlight): like a delegation call whose child works, nobody owns it.
// When every call of the step is closed or waits, the run goes Waiting:
// the claim is released and the active time charged up to then, never for
// the wait. Wake, called by the clock, closes the waits whose until came
// (the model sees "slept 10m0s (woke at …)") and queues the run for its
// next model request. A wait never outlasts limits.maxWait (default 24h)
// nor the run's deadline: Expire ends a Waiting run at its deadline, and
// a Cancel or any other end fails the waiting calls (closeOpen).

// defaultSleepParameters is the parameters schema of a Sleep tool that
// declares none.
const defaultSleepParameters = `{"type":"object","properties":{` +
	`"duration":{"type":"string","minLength":1,"maxLength":64,"description":"How long to wait, as a Go duration: 90s, 10m, 1h30m."}},` +
	`"required":["duration"],"additionalProperties":false}`

// waitKind is the kind of wait a tool's calls make: Timer (Sleep), Object
// (WaitFor), Callback (WaitForCallback); "" for a tool whose calls do not
// wait.
func (e *Env) waitKind(tool string) exagentv1.WaitKind {
	t := e.tool(tool)
	if t == nil || t.Builtin == nil {
		return ""
	}
	switch t.Builtin.Operation {
	case exagentv1.BuiltinSleep:
		return exagentv1.WaitTimer
	case exagentv1.BuiltinWaitFor:
		return exagentv1.WaitObject
	case exagentv1.BuiltinWaitForCallback:
		return exagentv1.WaitCallback
	}
	return ""
}

// waiting reports whether a call waits (begun, no IO in flight).
func waiting(c *exagentv1.ToolCall) bool {
	return c.State == exagentv1.CallStarted && c.Wait != nil
}

// maxWait is the longest one wait may last: the stricter of the Agent's
// limits.maxWait (DefaultMaxWait when unset) and the one the run
// journaled at its first claim (status.limits.maxWait, limits.go), so an
// Agent edit never lengthens the waits of a run under way. bounded is
// false when neither bounds it (Never: only the deadline does). A
// malformed value — admission refuses it — is the default.
func (e *Env) maxWait() (d time.Duration, bounded bool) {
	d, never, err := e.in.Agent.Limits.MaxWait.Parse(exagentv1.DefaultMaxWait)
	switch {
	case err != nil:
		d, bounded = exagentv1.DefaultMaxWait, true
	case never:
		d, bounded = 0, false
	default:
		bounded = true
	}
	if h := e.held; h != nil && h.MaxWait != nil && (!bounded || h.MaxWait.Duration < d) {
		d, bounded = max(h.MaxWait.Duration, 0), true
	}
	return d, bounded
}

// foreverWait is the until of a wait bounded by nothing (limits.maxWait
// Never, no timeout asked for, no deadline): the longest duration
// admission accepts anywhere.
const foreverWait = 100 * 365 * 24 * time.Hour

// waitPlan is what a waiting call asks for, from its arguments: the wait
// (kind, the duration or timeout as asked, the object or callback; since
// and until are set when it begins) and how long it may last at most.
// unbounded is a wait the call gave no timeout for: it lasts until
// limits.maxWait (or the deadline).
type waitPlan struct {
	wait      exagentv1.CallWait
	d         time.Duration
	unbounded bool
}

// planWait reads a waiting call's arguments; an error is what the model is
// told when they cannot be waited on. st is the run's status (a callback
// must be one of its own).
func (e *Env) planWait(st *Status, c *exagentv1.ToolCall) (waitPlan, error) {
	var p waitPlan
	if e.in.WaitsRefused != "" {
		return p, waitsRefused(e.in.WaitsRefused)
	}
	var err error
	switch e.waitKind(c.Tool) {
	case exagentv1.WaitTimer:
		p.wait.Duration, p.d, err = e.sleepDuration(c)
	case exagentv1.WaitObject:
		p, err = e.planObjectWait(c) // wait_object.go
	case exagentv1.WaitCallback:
		p, err = e.planCallbackWait(st, c) // wait_callback.go
	default:
		return p, fmt.Errorf("tool %q does not wait", c.Tool)
	}
	if err != nil {
		return p, err
	}
	if m, bounded := e.maxWait(); bounded && !p.unbounded && p.d > m {
		what := "timeout"
		if e.waitKind(c.Tool) == exagentv1.WaitTimer {
			what = "duration"
		}
		return p, fmt.Errorf("%s %s is longer than the longest wait allowed, limits.maxWait %s", what, p.d, m)
	}
	return p, nil
}

// waitTimeout is a call's timeout argument, "" when it gave none: a Go
// duration string, not negative.
func waitTimeout(raw any) (string, time.Duration, bool, error) {
	if raw == nil {
		return "", 0, false, nil
	}
	text, ok := raw.(string)
	if !ok {
		return "", 0, false, fmt.Errorf("timeout must be a string such as \"90s\", \"10m\" or \"1h30m\"")
	}
	d, err := time.ParseDuration(strings.TrimSpace(text))
	switch {
	case err != nil:
		return text, 0, false, fmt.Errorf("timeout %q is not a duration such as \"90s\", \"10m\" or \"1h30m\"", truncateUTF8(text, 64))
	case d < 0:
		return text, 0, false, fmt.Errorf("timeout %q is negative", text)
	}
	return text, d, true, nil
}

// sleepDuration is the wait a Sleep call asks for: its duration argument,
// a Go duration string, not negative.
func (e *Env) sleepDuration(c *exagentv1.ToolCall) (string, time.Duration, error) {
	var args struct {
		Duration any `json:"duration"`
	}
	if err := json.Unmarshal([]byte(c.Args), &args); err != nil {
		return "", 0, fmt.Errorf("the arguments are not a JSON object with a duration")
	}
	text, ok := args.Duration.(string)
	if !ok {
		return "", 0, fmt.Errorf("duration must be a string such as \"90s\", \"10m\" or \"1h30m\"")
	}
	d, err := time.ParseDuration(strings.TrimSpace(text))
	switch {
	case err != nil:
		return text, 0, fmt.Errorf("duration %q is not a duration such as \"90s\", \"10m\" or \"1h30m\"", truncateUTF8(text, 64))
	case d < 0:
		return text, 0, fmt.Errorf("duration %q is negative", text)
	}
	return text, d, nil
}

// waitsRefused is the manager's refusal of any new wait of the run
// (EnvInput.WaitsRefused): not the call's fault.
type waitsRefused string

func (w waitsRefused) Error() string { return string(w) }

// failWait ends a waiting call that cannot wait — its arguments, or the
// manager's cap on waiting runs: the model is told why, nothing waited.
func failWait(c *exagentv1.ToolCall, err error) {
	reason := exagentv1.ReasonInvalidArguments
	var refused waitsRefused
	if errors.As(err, &refused) {
		reason = exagentv1.ReasonTooManyWaits
	}
	c.State = exagentv1.CallFailed
	c.Outcome = &exagentv1.CallOutcome{Result: bound(fmt.Sprintf("%s: %v. Nothing waited.", reason, err), maxContent)}
}

// checkWait fails a proposed waiting call whose arguments cannot be
// waited on, before any policy or person sees it. It reports whether the
// call may go on.
func checkWait(st *Status, c *exagentv1.ToolCall, env *Env) bool {
	if env.isNewCallback(c.Tool) {
		return checkNewCallback(st, c, env) // wait_callback.go
	}
	if env.waitKind(c.Tool) == "" {
		return true
	}
	if _, err := env.planWait(st, c); err != nil {
		failWait(c, err)
		return false
	}
	return true
}

// beginWait begins an allowed waiting call: a wait until now plus the
// shortest of what it asked for, limits.maxWait and what is left before
// the deadline; no IO. The arguments are checked again: the Agent may
// have narrowed maxWait since the call was admitted. A wait that can end
// at once (a callback already received) ends here.
func beginWait(st *Status, c *exagentv1.ToolCall, env *Env, f Fence, now time.Time) {
	p, err := env.planWait(st, c)
	if err != nil {
		failWait(c, err)
		return
	}
	d := p.d
	switch m, bounded := env.maxWait(); {
	case p.unbounded && bounded:
		d = m
	case p.unbounded:
		d = foreverWait // maxWait Never: only the deadline bounds it
	case bounded && d > m:
		d = m
	}
	if dl := env.deadline(); dl != nil {
		d = min(d, max(dl.Sub(now), 0))
	}
	c.IdempotencyKey = env.callIdempotencyKey(c)
	c.State = exagentv1.CallStarted
	c.Attempt = f.Attempt
	c.StartedAt = microTimePtr(now)
	w := p.wait
	w.Kind, w.Duration = env.waitKind(c.Tool), truncateUTF8(w.Duration, 64)
	w.Since, w.Until = microTime(now), microTime(now.Add(d))
	c.Wait = &w
	if w.Kind == exagentv1.WaitCallback {
		consumeReceived(st, c, now) // wait_callback.go
	}
}

// wakeDue closes the waits whose until came by now, with a result that
// says how long the call slept and when it woke. It reports whether one
// was closed.
func wakeDue(st *Status, now time.Time) bool {
	woke := false
	for i := range st.Calls {
		c := &st.Calls[i]
		if !waiting(c) || now.Before(c.Wait.Until.Time) {
			continue
		}
		timeUp(c, now)
		woke = true
	}
	return woke
}

// timeUp closes a wait whose until came: a Sleep slept (Succeeded); a
// wait on an object or a callback timed out (Failed: what it waited for
// did not happen — the model is told, the run goes on).
func timeUp(c *exagentv1.ToolCall, now time.Time) {
	waited, at := roundWait(now.Sub(c.Wait.Since.Time)), now.UTC().Format(time.RFC3339)
	if c.Wait.Kind == exagentv1.WaitTimer {
		c.State = exagentv1.CallSucceeded
		c.Outcome = &exagentv1.CallOutcome{Succeeded: true, At: microTimePtr(now), Result: fmt.Sprintf("slept %s (woke at %s)", waited, at)}
		return
	}
	c.State = exagentv1.CallFailed
	c.Outcome = &exagentv1.CallOutcome{At: microTimePtr(now), Result: bound(fmt.Sprintf(
		"timed out after %s (at %s) waiting for %s", waited, at, c.Wait.Target()), maxContent)}
}

// roundWait is a wait as the model is told it: whole seconds, or
// milliseconds under a second.
func roundWait(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Second)
}

// nextWake is the earliest until of the waiting calls, and the calls
// that wait as "id (tool) until …".
func nextWake(st *Status) (time.Time, []string) {
	var next time.Time
	var names []string
	for i := range st.Calls {
		c := &st.Calls[i]
		if !waiting(c) {
			continue
		}
		u := c.Wait.Until.UTC()
		if next.IsZero() || u.Before(next) {
			next = u
		}
		what := ""
		if c.Wait.Kind != exagentv1.WaitTimer {
			what = " for " + c.Wait.Target()
		}
		names = append(names, fmt.Sprintf("%s (%s)%s until %s", c.ID, c.Tool, what, u.Format(time.RFC3339)))
	}
	return next, names
}

// goWaiting stops the run while its calls wait: the claim is released and
// the active time charged up to now (waiting is never charged).
func goWaiting(st *Status, env *Env, now time.Time) Action {
	releaseClaim(st, env, now)
	next, names := nextWake(st)
	setPhase(st, exagentv1.PhaseWaiting, exagentv1.ReasonWaiting, bound("waiting: "+strings.Join(names, ", "), maxMessage))
	return Action{Kind: ActWaitUntil, WakeAt: next, Reason: st.Reason, Message: st.Message}
}

// Wake applies the clock to a Waiting run: each waiting call whose until
// came succeeds, its result saying how long it slept and when it woke;
// once no call waits the run is Queued (Approved when a decision waits to
// be acted on) with reason Woken, for a worker's Claim to send the next
// model request. changed is false when nothing was due, or the run is not
// Waiting. The caller applies Expire first: a run past its deadline ends
// there, its waits never woken.
//
// Touches: the due calls (Succeeded, outcome), phase, reason, message.
// Guard: phase Waiting.
func Wake(s Status, env *Env, now time.Time) (Status, bool, error) {
	if s.Phase != exagentv1.PhaseWaiting {
		return s, false, nil
	}
	if d := env.deadline(); d != nil && !now.Before(*d) {
		return s, false, nil // Expire's
	}
	st := clone(s)
	if !wakeDue(&st, now) {
		return s, false, nil
	}
	afterWake(&st, now)
	return st, true, nil
}

// afterWake moves a Waiting run on once some of its waits closed (by the
// clock, Wake, or a callback, DeliverCallback): still Waiting, its message
// naming the calls that still wait, or, once none waits, Queued (Approved
// when a decision waits to be acted on) with reason Woken for a worker's
// Claim to send the next model request.
func afterWake(st *Status, now time.Time) {
	if anyCall(st, waiting) {
		_, names := nextWake(st)
		setPhase(st, exagentv1.PhaseWaiting, exagentv1.ReasonWaiting, bound("waiting: "+strings.Join(names, ", "), maxMessage))
		return
	}
	setPhase(st, resumePhase(st), exagentv1.ReasonWoken,
		fmt.Sprintf("woke at %s: waiting for a worker to claim the run", now.UTC().Format(time.RFC3339)))
}

// failWaiting closes a waiting call when its run ends: nothing happened,
// so it fails (never Uncertain), saying since when it waited.
func failWaiting(c *exagentv1.ToolCall, now time.Time) {
	c.State = exagentv1.CallFailed
	c.Outcome = &exagentv1.CallOutcome{At: microTimePtr(now), Result: fmt.Sprintf(
		"the run ended while the call waited (since %s, until %s)",
		c.Wait.Since.UTC().Format(time.RFC3339), c.Wait.Until.UTC().Format(time.RFC3339))}
}

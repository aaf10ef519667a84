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
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
)

// Waits (issue 41; docs/waits-plan.md). A call of a builtin Sleep tool
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

// isSleep reports whether calls of tool wait for a time.
func (e *Env) isSleep(tool string) bool {
	t := e.tool(tool)
	return t != nil && t.Builtin != nil && t.Builtin.Operation == exagentv1.BuiltinSleep
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

// sleepDuration is the wait a Sleep call asks for: its duration argument,
// a Go duration string, not negative, within limits.maxWait.
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
	if m, bounded := e.maxWait(); bounded && d > m {
		return text, 0, fmt.Errorf("duration %s is longer than the longest wait allowed, limits.maxWait %s", d, m)
	}
	return text, d, nil
}

// failSleep ends a Sleep call whose duration cannot be waited: the model
// is told why, nothing waited.
func failSleep(c *exagentv1.ToolCall, err error) {
	c.State = exagentv1.CallFailed
	c.Outcome = &exagentv1.CallOutcome{Result: bound(fmt.Sprintf(
		"%s: %v. Nothing waited.", exagentv1.ReasonInvalidArguments, err), maxContent)}
}

// checkSleep fails a proposed Sleep call whose duration cannot be waited,
// before any policy or person sees it. It reports whether the call may go on.
func checkSleep(c *exagentv1.ToolCall, env *Env) bool {
	if !env.isSleep(c.Tool) {
		return true
	}
	if _, _, err := env.sleepDuration(c); err != nil {
		failSleep(c, err)
		return false
	}
	return true
}

// beginSleep begins an allowed Sleep call: a wait until now plus the
// shortest of the duration, limits.maxWait and what is left before the
// deadline; no IO. The limits are checked again: the Agent may have
// narrowed maxWait since the call was admitted.
func beginSleep(c *exagentv1.ToolCall, env *Env, f Fence, now time.Time) {
	text, d, err := env.sleepDuration(c)
	if err != nil {
		failSleep(c, err)
		return
	}
	if m, bounded := env.maxWait(); bounded {
		d = min(d, m)
	}
	if dl := env.deadline(); dl != nil {
		d = min(d, max(dl.Sub(now), 0))
	}
	c.IdempotencyKey = env.callIdempotencyKey(c)
	c.State = exagentv1.CallStarted
	c.Attempt = f.Attempt
	c.StartedAt = microTimePtr(now)
	c.Wait = &exagentv1.CallWait{Kind: exagentv1.WaitTimer, Duration: truncateUTF8(text, 64),
		Since: microTime(now), Until: microTime(now.Add(d))}
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
		c.State = exagentv1.CallSucceeded
		c.Outcome = &exagentv1.CallOutcome{Succeeded: true, At: microTimePtr(now), Result: fmt.Sprintf(
			"slept %s (woke at %s)", roundWait(now.Sub(c.Wait.Since.Time)), now.UTC().Format(time.RFC3339))}
		woke = true
	}
	return woke
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
		names = append(names, fmt.Sprintf("%s (%s) until %s", c.ID, c.Tool, u.Format(time.RFC3339)))
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
	if anyCall(&st, waiting) {
		_, names := nextWake(&st)
		setPhase(&st, exagentv1.PhaseWaiting, exagentv1.ReasonWaiting, bound("waiting: "+strings.Join(names, ", "), maxMessage))
		return st, true, nil
	}
	setPhase(&st, resumePhase(&st), exagentv1.ReasonWoken,
		fmt.Sprintf("woke at %s: waiting for a worker to claim the run", now.UTC().Format(time.RFC3339)))
	return st, true, nil
}

// failWaiting closes a waiting call when its run ends: nothing happened,
// so it fails (never Uncertain), saying since when it waited.
func failWaiting(c *exagentv1.ToolCall, now time.Time) {
	c.State = exagentv1.CallFailed
	c.Outcome = &exagentv1.CallOutcome{At: microTimePtr(now), Result: fmt.Sprintf(
		"the run ended while the call waited (since %s, until %s)",
		c.Wait.Since.UTC().Format(time.RFC3339), c.Wait.Until.UTC().Format(time.RFC3339))}
}

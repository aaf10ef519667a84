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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/canonical"
)

// Callbacks (builtins NewCallback and WaitForCallback; docs/waits.md). A
// NewCallback call touches nothing: once the policy allows it, it closes
// at once with a one-time URL of the manager's callback listener and
// journals the callback in status.callbacks. A WaitForCallback call names
// that callback and waits (kind Callback) until DeliverCallback records
// the first valid POST to the URL, whose body becomes the call's result.
// A POST that arrives before the wait began is kept in status.callbacks
// and consumed when the wait begins (consumeReceived). The engine never
// sees a token: the controller's CallbackIssuer makes it, and its
// listener checks it before reading the run.

const (
	// MaxCallbacks bounds the callbacks one run may make (status.callbacks).
	MaxCallbacks = 16
	// MaxCallbackBody bounds the body of a POST to a callback URL: the
	// listener refuses a larger one while reading it.
	MaxCallbackBody = exagentv1.MaxValueBytes
	// maxCallbackID bounds the id a WaitForCallback call names.
	maxCallbackID = 64
)

// defaultNewCallbackParameters is the parameters schema of a NewCallback
// tool that declares none: it takes nothing.
const defaultNewCallbackParameters = `{"type":"object","properties":{},"additionalProperties":false}`

// defaultCallbackWaitParameters is the parameters schema of a
// WaitForCallback tool that declares none.
const defaultCallbackWaitParameters = `{"type":"object","properties":{` +
	`"callback":{"type":"string","minLength":1,"maxLength":64,"description":"The callback id a NewCallback call returned."},` +
	`"timeout":{"type":"string","minLength":1,"maxLength":64,"description":"How long to wait at most, as a Go duration: 90s, 10m, 1h30m. Default: the longest wait allowed."},` +
	`"schema":{"type":"object","description":"A JSON Schema the POSTed body must match; a body that does not is refused to the sender and the wait goes on."}},` +
	`"required":["callback"],"additionalProperties":false}`

// CallbackIssuer is how the manager makes callback URLs: the base URL of
// its callback listener and the token of a callback, a pure function of
// the run's UID, the callback id and its expiry (an HMAC under the
// manager's key). Set in EnvInput.Callbacks; nil when no listener serves
// callbacks.
type CallbackIssuer struct {
	// BaseURL is the listener's URL as callers reach it (https://host:port).
	BaseURL string
	// Token returns the token of callback id of run runUID, valid until
	// expiresAt, in URL-safe characters (base64url, dots).
	Token func(runUID, id string, expiresAt time.Time) string
}

// CallbackID is the id of the callback a NewCallback call makes: a
// function of the call's id only, so a retried step makes the same one
// and its URL is safe in a path whatever the model named the call.
func CallbackID(callID string) string {
	sum := sha256.Sum256([]byte("exagent.io/callback\x00" + callID))
	return "cb-" + hex.EncodeToString(sum[:12])
}

// isNewCallback reports whether calls of tool make a callback URL.
func (e *Env) isNewCallback(tool string) bool {
	t := e.tool(tool)
	return t != nil && t.Builtin != nil && t.Builtin.Operation == exagentv1.BuiltinNewCallback
}

// findCallback is the callback id of the run, nil when it has none.
func findCallback(st *Status, id string) *exagentv1.RunCallback {
	for i := range st.Callbacks {
		if st.Callbacks[i].ID == id {
			return &st.Callbacks[i]
		}
	}
	return nil
}

// newCallbackRefusal is why a NewCallback call cannot make a callback, ""
// when it can: no listener serves callbacks, or the run made as many as
// it may. A retried call finds its own callback and may always go on.
func newCallbackRefusal(st *Status, c *exagentv1.ToolCall, env *Env) string {
	switch {
	case env.in.Callbacks == nil:
		return "the manager serves no callback listener (its --trigger-bind-address and --callback-base-url are not set): no callback URL can be made"
	case findCallback(st, CallbackID(c.ID)) != nil:
		return ""
	case len(st.Callbacks) >= MaxCallbacks:
		return fmt.Sprintf("this run made %d callbacks already, the most one run may make", MaxCallbacks)
	}
	return ""
}

// checkNewCallback fails a proposed NewCallback call that cannot make a
// callback before any policy or person sees it; it reports whether the
// call may go on.
func checkNewCallback(st *Status, c *exagentv1.ToolCall, env *Env) bool {
	if why := newCallbackRefusal(st, c, env); why != "" {
		failNewCallback(c, why)
		return false
	}
	return true
}

func failNewCallback(c *exagentv1.ToolCall, why string) {
	c.State = exagentv1.CallFailed
	c.Outcome = &exagentv1.CallOutcome{Result: bound("NewCallback: "+why+". Nothing was made.", maxContent)}
}

// newCallback closes an allowed NewCallback call at once: the callback is
// journaled (once: a retried step finds it) and the model is given its
// id, URL and expiry. The expiry is limits.maxWait from now, never past
// the run's deadline, in whole seconds (the token carries it).
func newCallback(st *Status, c *exagentv1.ToolCall, env *Env, now time.Time) {
	if why := newCallbackRefusal(st, c, env); why != "" {
		failNewCallback(c, why)
		return
	}
	id := CallbackID(c.ID)
	cb := findCallback(st, id)
	if cb == nil {
		d, bounded := env.maxWait()
		if !bounded {
			d = foreverWait
		}
		expires := now.Add(d)
		if dl := env.deadline(); dl != nil && dl.Before(expires) {
			expires = *dl
		}
		expires = expires.Truncate(time.Second)
		if !expires.After(now) {
			failNewCallback(c, "the run's deadline leaves no time to receive a callback")
			return
		}
		st.Callbacks = append(st.Callbacks, exagentv1.RunCallback{
			ID: id, CallID: truncateUTF8(c.ID, 64), CreatedAt: microTime(now), ExpiresAt: microTime(expires)})
		cb = &st.Callbacks[len(st.Callbacks)-1]
	}
	is := env.in.Callbacks
	expires := cb.ExpiresAt.UTC()
	// No escaping (the engine imports no net/url): a namespace is a DNS
	// label, a UID hex and dashes, the id hex, and Token's contract is
	// URL-safe characters.
	u := strings.TrimRight(is.BaseURL, "/") + "/callbacks/" + env.in.RunNamespace + "/" +
		env.in.RunUID + "/" + id + "?token=" + is.Token(env.in.RunUID, id, expires)
	result, err := json.Marshal(struct {
		Callback  string `json:"callback"`
		URL       string `json:"url"`
		ExpiresAt string `json:"expiresAt"`
	}{id, u, expires.Format(time.RFC3339)})
	if err != nil {
		failNewCallback(c, "encoding the result: "+err.Error())
		return
	}
	c.IdempotencyKey = env.callIdempotencyKey(c)
	c.StartedAt = microTimePtr(now)
	c.State = exagentv1.CallSucceeded
	c.Outcome = &exagentv1.CallOutcome{Succeeded: true, At: microTimePtr(now), Result: string(result)}
}

// callbackArgs are a WaitForCallback call's arguments.
type callbackArgs struct {
	Callback any             `json:"callback"`
	Timeout  any             `json:"timeout"`
	Schema   json.RawMessage `json:"schema"`
}

// planCallbackWait reads a WaitForCallback call's arguments: the callback
// must be one of the run's, not received by another call; the timeout,
// when given, a duration; the schema, when given, a usable JSON Schema.
func (e *Env) planCallbackWait(st *Status, c *exagentv1.ToolCall) (waitPlan, error) {
	var p waitPlan
	var args callbackArgs
	if err := json.Unmarshal([]byte(c.Args), &args); err != nil {
		return p, errors.New("the arguments are not a JSON object with a callback")
	}
	id, ok := args.Callback.(string)
	if !ok || id == "" {
		return p, errors.New("callback must be the id (a string) a NewCallback call returned")
	}
	if len(id) > maxCallbackID {
		return p, fmt.Errorf("callback %q is longer than %d bytes: it is not one a NewCallback call returned", truncateUTF8(id, maxCallbackID), maxCallbackID)
	}
	cb := findCallback(st, id)
	switch {
	case cb == nil:
		return p, fmt.Errorf("callback %q is not one of this run's: call NewCallback first and pass the callback id it returned", id)
	case cb.ConsumedBy != "" && cb.ConsumedBy != c.ID:
		return p, fmt.Errorf("callback %q was received already, by call %s: a callback is received once", id, cb.ConsumedBy)
	}
	if _, err := callbackSchema(c); err != nil {
		return p, err
	}
	text, d, has, err := waitTimeout(args.Timeout)
	if err != nil {
		return p, err
	}
	p.wait.Callback, p.wait.Duration, p.d, p.unbounded = id, text, d, !has
	return p, nil
}

// callbackSchema is the compiled schema a WaitForCallback call checks the
// body with, nil when it gave none. The arguments must be inline: the
// caller puts back sealed ones first.
func callbackSchema(c *exagentv1.ToolCall) (*ArgSchema, error) {
	if c.Args == "" && c.ArgsRef != nil {
		return nil, errors.New("the call's arguments are sealed in a segment: read them back first")
	}
	var args callbackArgs
	if err := json.Unmarshal([]byte(c.Args), &args); err != nil {
		return nil, errors.New("the arguments are not a JSON object with a callback")
	}
	if len(args.Schema) == 0 || string(args.Schema) == "null" {
		return nil, nil
	}
	canon, err := canonical.JSON(args.Schema)
	if err != nil {
		return nil, fmt.Errorf("schema is not JSON: %w", err)
	}
	if len(canon) > maxAnswerSchema {
		return nil, fmt.Errorf("schema takes %d bytes, more than %d", len(canon), maxAnswerSchema)
	}
	sch, err := CompileArgSchema(canon)
	if err != nil {
		return nil, fmt.Errorf("schema is not a usable JSON Schema: %w", err)
	}
	return sch, nil
}

// consumeReceived ends a WaitForCallback call at once when its callback
// was received before the wait began (its body is the result), or has
// expired (nothing can arrive any more). Otherwise the wait lasts at
// most until the callback expires: no POST is accepted after.
func consumeReceived(st *Status, c *exagentv1.ToolCall, now time.Time) {
	cb := findCallback(st, c.Wait.Callback)
	if cb == nil { // planCallbackWait found it: a status edited since
		failWait(c, fmt.Errorf("callback %q is not one of this run's", c.Wait.Callback))
		return
	}
	switch {
	case cb.ReceivedAt != nil && cb.ConsumedBy == "":
		sch, err := callbackSchema(c)
		if err == nil && sch != nil {
			err = sch.Validate(cb.Body)
		}
		if err != nil {
			cb.ConsumedBy = c.ID
			c.State = exagentv1.CallFailed
			c.Outcome = &exagentv1.CallOutcome{At: microTimePtr(now), Result: bound(fmt.Sprintf(
				"the body callback %s received at %s does not match the schema: %v. The body: %s",
				cb.ID, cb.ReceivedAt.UTC().Format(time.RFC3339), err, cb.Body), maxContent)}
			cb.Body = ""
			return
		}
		receive(cb, c, now)
	case !now.Before(cb.ExpiresAt.Time):
		c.State = exagentv1.CallFailed
		c.Outcome = &exagentv1.CallOutcome{At: microTimePtr(now), Result: fmt.Sprintf(
			"callback %s expired at %s: nothing can be received on it any more", cb.ID, cb.ExpiresAt.UTC().Format(time.RFC3339))}
	case cb.ExpiresAt.Before(&c.Wait.Until):
		c.Wait.Until = cb.ExpiresAt
	}
}

// receive closes call c with the body callback cb received. The body
// moves to the call's result, which the store may seal into a segment:
// status.callbacks keeps only when it arrived and who received it, so
// sixteen bodies never sit in the hot status at once.
func receive(cb *exagentv1.RunCallback, c *exagentv1.ToolCall, now time.Time) {
	c.State = exagentv1.CallSucceeded
	c.Outcome = &exagentv1.CallOutcome{Succeeded: true, At: microTimePtr(now), Result: bound(cb.Body, maxContent)}
	cb.ConsumedBy, cb.Body = c.ID, ""
}

// CallbackRefusal is why DeliverCallback refused a POST; the listener
// answers each with its own status code.
type CallbackRefusal string

const (
	// CallbackUnknown: the run has no such callback (404).
	CallbackUnknown CallbackRefusal = "Unknown"
	// CallbackRunEnded: the run ended, or is past its deadline (404).
	CallbackRunEnded CallbackRefusal = "RunEnded"
	// CallbackExpired: the callback's URL expired (410).
	CallbackExpired CallbackRefusal = "Expired"
	// CallbackReceived: the callback received its POST already (409).
	CallbackReceived CallbackRefusal = "Received"
	// CallbackInvalid: the body is not JSON or does not match the
	// waiting call's schema (400); the wait goes on.
	CallbackInvalid CallbackRefusal = "Invalid"
	// CallbackTooLarge: the body is larger than MaxCallbackBody, or the
	// run's status has no room for it (413).
	CallbackTooLarge CallbackRefusal = "TooLarge"
)

// CallbackError is a POST DeliverCallback refused, and why.
type CallbackError struct {
	Refusal CallbackRefusal
	Msg     string
}

func (e *CallbackError) Error() string { return e.Msg }

func refuseCallback(r CallbackRefusal, format string, args ...any) error {
	return &CallbackError{Refusal: r, Msg: fmt.Sprintf(format, args...)}
}

// AsCallbackError reports whether err is a refused POST, and which.
func AsCallbackError(err error) (*CallbackError, bool) {
	var ce *CallbackError
	ok := errors.As(err, &ce)
	return ce, ok
}

// DeliverCallback applies the first valid POST to callback id of the run:
// the body (JSON, at most MaxCallbackBody) is recorded in status.callbacks
// with when it arrived. When a WaitForCallback call waits on it, the body
// must match the call's schema; the call then succeeds with the body as
// its result and, once no call waits, the run is Queued (Approved when a
// decision waits to be acted on) with reason Woken, as Wake does. When no
// call waits yet, the body is kept for the WaitForCallback call that will
// (consumeReceived). A waiting call whose timeout passed meanwhile times
// out first (as Wake would have it), and the body is kept.
//
// Refusals are *CallbackError: a run that ended or is past its deadline,
// an unknown, expired or already received callback, a body that is not
// JSON, does not match the schema or does not fit in the status. Nothing
// changes then. The caller checked the URL's token.
//
// Touches: status.callbacks, the waiting call (Succeeded, outcome), phase,
// reason, message.
// Guard: a live run; the callback's first valid POST.
func DeliverCallback(s Status, env *Env, id string, body []byte, now time.Time) (Status, error) {
	if s.Phase.IsTerminal() {
		return s, refuseCallback(CallbackRunEnded, "the run ended (%s): it receives no callback", s.Phase)
	}
	if d := env.deadline(); d != nil && !now.Before(*d) {
		return s, refuseCallback(CallbackRunEnded, "the run is past its deadline (%s): it receives no callback", d.Format(time.RFC3339))
	}
	cb := findCallback(&s, id)
	switch {
	case cb == nil:
		return s, refuseCallback(CallbackUnknown, "the run has no callback %q", truncateUTF8(id, maxCallbackID))
	case cb.ReceivedAt != nil:
		return s, refuseCallback(CallbackReceived, "callback %s was received already, at %s: it is received once",
			id, cb.ReceivedAt.UTC().Format(time.RFC3339))
	case !now.Before(cb.ExpiresAt.Time):
		return s, refuseCallback(CallbackExpired, "callback %s expired at %s", id, cb.ExpiresAt.UTC().Format(time.RFC3339))
	case len(body) > MaxCallbackBody:
		return s, refuseCallback(CallbackTooLarge, "the body is %d bytes, more than %d", len(body), MaxCallbackBody)
	}
	canon, err := canonical.JSON(json.RawMessage(body))
	if err != nil {
		return s, refuseCallback(CallbackInvalid, "the body is not JSON: %v", err)
	}
	if len(canon) > MaxCallbackBody {
		return s, refuseCallback(CallbackTooLarge, "the body is %d bytes as canonical JSON, more than %d", len(canon), MaxCallbackBody)
	}
	st := clone(s)
	cb = findCallback(&st, id)
	var waiter *exagentv1.ToolCall
	for i := range st.Calls {
		if c := &st.Calls[i]; waiting(c) && c.Wait.Kind == exagentv1.WaitCallback && c.Wait.Callback == id {
			waiter = c
			break
		}
	}
	closed := false
	if waiter != nil && !now.Before(waiter.Wait.Until.Time) {
		timeUp(waiter, now) // its timeout came first; the body is kept
		waiter, closed = nil, true
	}
	if waiter != nil {
		sch, err := callbackSchema(waiter)
		if err != nil {
			return s, fmt.Errorf("call %s: %w", waiter.ID, err)
		}
		if sch != nil {
			if err := sch.Validate(string(canon)); err != nil {
				return s, refuseCallback(CallbackInvalid, "the body does not match the schema of call %s: %v", waiter.ID, err)
			}
		}
	}
	cb.ReceivedAt, cb.Body = microTimePtr(now), string(canon)
	if waiter != nil {
		receive(cb, waiter, now)
		closed = true
	}
	if err := checkSize(&st, env, 0, "the callback's body"); err != nil {
		return s, refuseCallback(CallbackTooLarge, "the run's status has no room for the body: %v", err)
	}
	if closed && st.Phase == exagentv1.PhaseWaiting {
		afterWake(&st, now) // wait.go
	}
	return st, nil
}

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
	"errors"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
)

// Callbacks (builtins NewCallback and WaitForCallback). Not implemented
// yet: admission refuses the operations (webhook/agent_validation.go).

// isNewCallback reports whether calls of tool make a callback URL.
func (e *Env) isNewCallback(tool string) bool {
	t := e.tool(tool)
	return t != nil && t.Builtin != nil && t.Builtin.Operation == exagentv1.BuiltinNewCallback
}

// newCallback closes a NewCallback call at once with its URL.
func newCallback(_ *Status, c *exagentv1.ToolCall, _ *Env, now time.Time) {
	c.State = exagentv1.CallFailed
	c.Outcome = &exagentv1.CallOutcome{At: microTimePtr(now), Result: "NewCallback is not supported by this version"}
}

// planCallbackWait reads a WaitForCallback call's arguments.
func (e *Env) planCallbackWait(_ *Status, _ *exagentv1.ToolCall) (waitPlan, error) {
	return waitPlan{}, errors.New("WaitForCallback is not supported by this version")
}

// consumeReceived ends a WaitForCallback call at once when its callback
// was received before the wait began.
func consumeReceived(_ *Status, _ *exagentv1.ToolCall, _ time.Time) {}

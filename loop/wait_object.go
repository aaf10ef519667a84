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

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
)

// Waits on cluster objects (builtin WaitFor). Not implemented yet:
// admission refuses the operation (webhook/agent_validation.go).

// planObjectWait reads a WaitFor call's arguments.
func (e *Env) planObjectWait(c *exagentv1.ToolCall) (waitPlan, error) {
	return waitPlan{}, errors.New("WaitFor is not supported by this version")
}

// describeObjectWait says what a WaitFor call waits on.
func describeObjectWait(o *exagentv1.WaitedObject) string {
	if o == nil {
		return "an object"
	}
	what := o.Kind + " " + o.Namespace + "/" + o.Name
	if o.Name == "" {
		what = o.Kind + " in " + o.Namespace + " with labels " + o.LabelSelector
	}
	return what + " to be " + o.Condition
}

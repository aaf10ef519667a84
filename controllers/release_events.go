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

package controllers

import (
	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// publishReleased sends the Event of a run whose hand-back at the stop
// also ended it (a result recorded in the drain finished or failed it, or
// left a call Uncertain): the Event a reconcile would have sent, after the
// commit that made it true. The Event queue has stopped by then, and
// writes it at once (internal/eventqueue).
func (r *AgentRunReconciler) publishReleased(old, written *exagentv1.AgentRun) {
	p := written.Status.Phase
	if p == old.Status.Phase || (!p.IsTerminal() && p != exagentv1.PhaseUncertain) {
		return
	}
	sc := &scope{run: written}
	sc.noteEnd(written.Status)
	r.publish(sc)
}

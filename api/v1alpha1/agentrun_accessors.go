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

package v1alpha1

// Small read-only accessors over a run's journal, shared by the admission
// webhook and the kubectl plugin. The engine (loop/) keeps its own
// index-based helpers because it mutates entries in place.

// Call returns the journal entry of call id, or nil.
func (s *AgentRunStatus) Call(id string) *ToolCall {
	for i := range s.Calls {
		if s.Calls[i].ID == id {
			return &s.Calls[i]
		}
	}
	return nil
}

// Approval returns approval id, or nil.
func (s *AgentRunStatus) Approval(id string) *Approval {
	for i := range s.Approvals {
		if s.Approvals[i].ID == id {
			return &s.Approvals[i]
		}
	}
	return nil
}

// Pending returns the approvals waiting for a decision, in request order.
func (s *AgentRunStatus) Pending() []Approval {
	var out []Approval
	for _, a := range s.Approvals {
		if a.State == ApprovalPending {
			out = append(out, a)
		}
	}
	return out
}

// UncertainCalls returns the calls waiting for a Resolve, in journal order.
func (s *AgentRunStatus) UncertainCalls() []ToolCall {
	var out []ToolCall
	for _, c := range s.Calls {
		if c.State == CallUncertain {
			out = append(out, c)
		}
	}
	return out
}

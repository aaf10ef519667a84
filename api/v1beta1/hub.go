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

package v1beta1

// v1beta1 is the conversion hub (controller-runtime's conversion.Hub):
// every other served version converts to and from these types, so the
// conversion webhook needs one pair of functions per version, never one
// per pair of versions. The methods are markers only.

// Hub marks Agent as the conversion hub.
func (*Agent) Hub() {}

// Hub marks AgentRun as the conversion hub.
func (*AgentRun) Hub() {}

// Hub marks ApprovalDecision as the conversion hub.
func (*ApprovalDecision) Hub() {}

// Hub marks AgentRunSegment as the conversion hub.
func (*AgentRunSegment) Hub() {}

// Hub marks Conversation as the conversion hub.
func (*Conversation) Hub() {}

// Hub marks AgentSchedule as the conversion hub.
func (*AgentSchedule) Hub() {}

// Hub marks AgentTrigger as the conversion hub.
func (*AgentTrigger) Hub() {}

// Hub marks AgentBudget as the conversion hub.
func (*AgentBudget) Hub() {}

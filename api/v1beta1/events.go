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

// Reasons of the Kubernetes Events the manager records on runs and
// decisions. The names are fixed: people, alerts and tests filter on them
// (kubectl get events --field-selector reason=ApprovalRequested).
const (
	// EventApprovalRequested: a call waits for a person (one Event per
	// approval; its message says who may decide and how).
	EventApprovalRequested = "ApprovalRequested"
	// EventInputRequested: a question waits for a person's answer.
	EventInputRequested = "InputRequested"
	// EventRunPaused: the run paused for approvals.
	EventRunPaused = "RunPaused"
	// EventDecisionApplied and EventDecisionRejected: an ApprovalDecision
	// was applied to its run, or refused (its status.reason says why).
	EventDecisionApplied  = "DecisionApplied"
	EventDecisionRejected = "DecisionRejected"
	// EventRunResumed: a run that was approved is running again.
	EventRunResumed = "RunResumed"
	// EventRunWaiting and EventRunWoken: the run waits on a timer, an
	// object or a callback (the message says which, until when), and the
	// wait ended.
	EventRunWaiting = "RunWaiting"
	EventRunWoken   = "RunWoken"
	// EventRunSucceeded and EventRunFailed: the run ended (Failed stands
	// for every end other than Succeeded; the message names the phase).
	EventRunSucceeded = "RunSucceeded"
	EventRunFailed    = "RunFailed"
	// EventOutcomeUncertain: a call's outcome is unknown; a person resolves it.
	EventOutcomeUncertain = "OutcomeUncertain"
	// EventChildStarted, EventChildPaused and EventChildEnded: a parent's
	// delegation child started, waits for a person, or ended.
	EventChildStarted = "ChildStarted"
	EventChildPaused  = "ChildPaused"
	EventChildEnded   = "ChildEnded"
	// EventChildWithdrawn: the parent ended a child it no longer awaits.
	EventChildWithdrawn = "ChildWithdrawn"
	// EventNotificationFailed: a notification delivery failed (its first
	// failure, and when it is given up), or could not be journaled; the
	// message says which, and the run's notifications journal says why.
	EventNotificationFailed = "NotificationFailed"
)

// Events of AgentBudgets (on the AgentBudget).
const (
	// EventBudgetNearlyExhausted: a limit of the budget crossed 80 % used.
	EventBudgetNearlyExhausted = "BudgetNearlyExhausted"
	// EventBudgetExhausted: a limit of the budget is used up (100 %): new
	// runs in its scope wait BudgetExhausted.
	EventBudgetExhausted = "BudgetExhausted"
)

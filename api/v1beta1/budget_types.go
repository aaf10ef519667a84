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

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Limits of an AgentBudget, as named in messages, status and metrics.
const (
	BudgetTokensPerDay      = "tokensPerDay"
	BudgetRunsPerHour       = "runsPerHour"
	BudgetMaxConcurrentRuns = "maxConcurrentRuns"
	BudgetCostPerMonth      = "costPerMonth"
)

// Conditions and reasons of AgentBudgets and of the runs they hold.
const (
	// ReasonBudgetExhausted: a Queued run waits (no claim, no IO) because
	// an AgentBudget selecting its Agent is at or past a limit; it starts
	// when the window rolls over or the budget is raised. Never a failure.
	ReasonBudgetExhausted = "BudgetExhausted"
	// ConditionExhausted is True on an AgentBudget while one of its limits
	// is used up (the reason names the limit).
	ConditionExhausted = "Exhausted"
	// ReasonWithinBudget: no limit of the budget is used up.
	ReasonWithinBudget = "WithinBudget"
	// ReasonInvalidSelector: spec.agentSelector does not parse.
	ReasonInvalidSelector = "InvalidSelector"
	// ReasonBudgetComputed: the budget's spend was computed from the runs.
	ReasonBudgetComputed = "Computed"
)

// AgentBudgetSpec is what the runs of the Agents a budget selects may use,
// summed over those runs. Windows are fixed and in UTC: tokens per UTC day
// and cost per UTC calendar month, each run charged to the window it
// started in (first claimed); runs per hour over the last 60 minutes.
// +kubebuilder:validation:XValidation:rule="has(self.tokensPerDay) || has(self.runsPerHour) || has(self.maxConcurrentRuns) || has(self.costPerMonth)",message="set at least one of tokensPerDay, runsPerHour, maxConcurrentRuns, costPerMonth"
type AgentBudgetSpec struct {
	// agentSelector selects the Agents of the namespace, by their labels,
	// whose runs the budget counts and holds; unset selects every Agent
	// of the namespace.
	// +optional
	AgentSelector *metav1.LabelSelector `json:"agentSelector,omitempty"`

	// tokensPerDay bounds the prompt and completion tokens of the runs
	// that started in one UTC day.
	// +optional
	// +kubebuilder:validation:Minimum=0
	TokensPerDay *int64 `json:"tokensPerDay,omitempty"`

	// runsPerHour bounds the runs that start in any 60 minutes.
	// +optional
	// +kubebuilder:validation:Minimum=0
	RunsPerHour *int32 `json:"runsPerHour,omitempty"`

	// maxConcurrentRuns bounds the runs that have started and not ended
	// (running, waiting for a person, Uncertain) at once.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxConcurrentRuns *int32 `json:"maxConcurrentRuns,omitempty"`

	// costPerMonth bounds the cost of the runs that started in one UTC
	// calendar month, a decimal in the currency of the Agents'
	// model.pricing; runs of an Agent without pricing cost nothing.
	// +optional
	// +kubebuilder:validation:MaxLength=22
	// +kubebuilder:validation:Pattern=`^[0-9]{1,12}(\.[0-9]{1,9})?$`
	CostPerMonth *string `json:"costPerMonth,omitempty"`
}

// BudgetSpend is what the runs in a budget's scope used in its windows.
type BudgetSpend struct {
	// tokensToday are the tokens of the runs that started this UTC day.
	// +optional
	TokensToday int64 `json:"tokensToday,omitempty"`
	// runsLastHour are the runs that started in the last 60 minutes.
	// +optional
	RunsLastHour int32 `json:"runsLastHour,omitempty"`
	// concurrentRuns are the runs that started and have not ended.
	// +optional
	ConcurrentRuns int32 `json:"concurrentRuns,omitempty"`
	// costThisMonth is the cost of the runs that started this UTC month,
	// a decimal in the pricing's currency.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	CostThisMonth string `json:"costThisMonth,omitempty"`
}

// BudgetLimitUse is how much of one limit is used.
type BudgetLimitUse struct {
	// limit is tokensPerDay, runsPerHour, maxConcurrentRuns or costPerMonth.
	// +required
	// +kubebuilder:validation:MaxLength=32
	Limit string `json:"limit"`
	// used is the spend against the limit, as a decimal string.
	// +required
	// +kubebuilder:validation:MaxLength=32
	Used string `json:"used"`
	// max is the limit, as a decimal string.
	// +required
	// +kubebuilder:validation:MaxLength=32
	Max string `json:"max"`
	// percent is used as a whole percentage of max (100 or more: exhausted).
	// +optional
	Percent int32 `json:"percent,omitempty"`
	// rollsOverAt is when the limit's window next rolls over (unset for
	// maxConcurrentRuns, which frees as runs end).
	// +optional
	RollsOverAt *metav1.Time `json:"rollsOverAt,omitempty"`
}

// AgentBudgetStatus is the spend the budget controller computed from the
// runs' own ledgers (never a separate counter).
type AgentBudgetStatus struct {
	// conditions are Ready (the budget is computed) and Exhausted (True
	// while a limit is used up, its reason naming the limit).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// dayStart is the start of the current UTC day (tokensPerDay's window).
	// +optional
	DayStart *metav1.Time `json:"dayStart,omitempty"`
	// monthStart is the start of the current UTC month (costPerMonth's window).
	// +optional
	MonthStart *metav1.Time `json:"monthStart,omitempty"`
	// spend is what the runs in scope used in the current windows.
	// +optional
	Spend BudgetSpend `json:"spend,omitempty,omitzero"`
	// limits are the spend against each limit set, in spec order.
	// +optional
	// +listType=map
	// +listMapKey=limit
	// +kubebuilder:validation:MaxItems=4
	Limits []BudgetLimitUse `json:"limits,omitempty"`
	// observedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// AgentBudgetUse is, on an Agent's status, one AgentBudget that selects
// the Agent and its spend against each limit.
type AgentBudgetUse struct {
	// name of the AgentBudget (same namespace).
	// +required
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// exhausted is true while a limit of the budget is used up: new runs
	// of the Agent wait BudgetExhausted.
	// +optional
	Exhausted bool `json:"exhausted,omitempty"`
	// limits are the spend against each limit set.
	// +optional
	// +listType=map
	// +listMapKey=limit
	// +kubebuilder:validation:MaxItems=4
	Limits []BudgetLimitUse `json:"limits,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=abudget,categories=exagent
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="TOKENS/DAY",type=integer,JSONPath=`.spec.tokensPerDay`
// +kubebuilder:printcolumn:name="TOKENS TODAY",type=integer,JSONPath=`.status.spend.tokensToday`
// +kubebuilder:printcolumn:name="RUNS/HOUR",type=integer,JSONPath=`.spec.runsPerHour`
// +kubebuilder:printcolumn:name="RUNS LAST HOUR",type=integer,JSONPath=`.status.spend.runsLastHour`
// +kubebuilder:printcolumn:name="MAX CONCURRENT",type=integer,JSONPath=`.spec.maxConcurrentRuns`
// +kubebuilder:printcolumn:name="CONCURRENT",type=integer,JSONPath=`.status.spend.concurrentRuns`
// +kubebuilder:printcolumn:name="COST/MONTH",type=string,JSONPath=`.spec.costPerMonth`
// +kubebuilder:printcolumn:name="COST THIS MONTH",type=string,JSONPath=`.status.spend.costThisMonth`
// +kubebuilder:printcolumn:name="EXHAUSTED",type=string,JSONPath=`.status.conditions[?(@.type=="Exhausted")].status`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`

// AgentBudget bounds, across runs, what the runs of the Agents it selects
// in its namespace may use (DESIGN §19). It is owned by the platform team
// (RBAC apart from the Agents' authors): a run that would pass it waits
// Queued with reason BudgetExhausted — never failed, never charged twice —
// and starts when the window rolls over or the budget is raised.
// +kubebuilder:validation:XValidation:rule="has(self.spec)",message="spec is required: set at least one of tokensPerDay, runsPerHour, maxConcurrentRuns, costPerMonth"
type AgentBudget struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the budget's object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the limits and which Agents they hold (required: the
	// object's validation refuses a budget without one).
	// +optional
	Spec AgentBudgetSpec `json:"spec,omitempty,omitzero"`
	// status is the spend the controller computed.
	// +optional
	Status AgentBudgetStatus `json:"status,omitempty,omitzero"`
}

// +kubebuilder:object:root=true

// AgentBudgetList contains a list of AgentBudget.
type AgentBudgetList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the list's metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items are the budgets.
	Items []AgentBudget `json:"items"`
}

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

import (
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/conversion"

	"github.com/exagent-io/exagent/api/v1beta1"
)

// Each kind is a conversion.Convertible to its v1beta1 hub, through the
// functions conversion-gen writes field by field
// (zz_generated.conversion.go). A field v1beta1 gains without a v1alpha1
// twin makes conversion-gen stop and ask for a hand-written function, so
// a lossy conversion cannot slip in unnoticed; the round trip of every
// kind is fuzzed (conversion_test.go).

// hubAs asserts the hub's concrete type, naming it when it is wrong.
func hubAs[T conversion.Hub](hub conversion.Hub) (T, error) {
	t, ok := hub.(T)
	if !ok {
		var want T
		return want, fmt.Errorf("convert: hub is %T, want %T", hub, want)
	}
	return t, nil
}

// ConvertTo converts this Agent to the hub version.
func (src *Agent) ConvertTo(hub conversion.Hub) error {
	dst, err := hubAs[*v1beta1.Agent](hub)
	if err != nil {
		return err
	}
	return Convert_v1alpha1_Agent_To_v1beta1_Agent(src, dst, nil)
}

// ConvertFrom converts the hub version to this Agent.
func (dst *Agent) ConvertFrom(hub conversion.Hub) error {
	src, err := hubAs[*v1beta1.Agent](hub)
	if err != nil {
		return err
	}
	return Convert_v1beta1_Agent_To_v1alpha1_Agent(src, dst, nil)
}

// ConvertTo converts this AgentRun to the hub version.
func (src *AgentRun) ConvertTo(hub conversion.Hub) error {
	dst, err := hubAs[*v1beta1.AgentRun](hub)
	if err != nil {
		return err
	}
	return Convert_v1alpha1_AgentRun_To_v1beta1_AgentRun(src, dst, nil)
}

// ConvertFrom converts the hub version to this AgentRun.
func (dst *AgentRun) ConvertFrom(hub conversion.Hub) error {
	src, err := hubAs[*v1beta1.AgentRun](hub)
	if err != nil {
		return err
	}
	return Convert_v1beta1_AgentRun_To_v1alpha1_AgentRun(src, dst, nil)
}

// ConvertTo converts this ApprovalDecision to the hub version.
func (src *ApprovalDecision) ConvertTo(hub conversion.Hub) error {
	dst, err := hubAs[*v1beta1.ApprovalDecision](hub)
	if err != nil {
		return err
	}
	return Convert_v1alpha1_ApprovalDecision_To_v1beta1_ApprovalDecision(src, dst, nil)
}

// ConvertFrom converts the hub version to this ApprovalDecision.
func (dst *ApprovalDecision) ConvertFrom(hub conversion.Hub) error {
	src, err := hubAs[*v1beta1.ApprovalDecision](hub)
	if err != nil {
		return err
	}
	return Convert_v1beta1_ApprovalDecision_To_v1alpha1_ApprovalDecision(src, dst, nil)
}

// ConvertTo converts this AgentRunSegment to the hub version.
func (src *AgentRunSegment) ConvertTo(hub conversion.Hub) error {
	dst, err := hubAs[*v1beta1.AgentRunSegment](hub)
	if err != nil {
		return err
	}
	return Convert_v1alpha1_AgentRunSegment_To_v1beta1_AgentRunSegment(src, dst, nil)
}

// ConvertFrom converts the hub version to this AgentRunSegment.
func (dst *AgentRunSegment) ConvertFrom(hub conversion.Hub) error {
	src, err := hubAs[*v1beta1.AgentRunSegment](hub)
	if err != nil {
		return err
	}
	return Convert_v1beta1_AgentRunSegment_To_v1alpha1_AgentRunSegment(src, dst, nil)
}

// ConvertTo converts this Conversation to the hub version.
func (src *Conversation) ConvertTo(hub conversion.Hub) error {
	dst, err := hubAs[*v1beta1.Conversation](hub)
	if err != nil {
		return err
	}
	return Convert_v1alpha1_Conversation_To_v1beta1_Conversation(src, dst, nil)
}

// ConvertFrom converts the hub version to this Conversation.
func (dst *Conversation) ConvertFrom(hub conversion.Hub) error {
	src, err := hubAs[*v1beta1.Conversation](hub)
	if err != nil {
		return err
	}
	return Convert_v1beta1_Conversation_To_v1alpha1_Conversation(src, dst, nil)
}

// ConvertTo converts this AgentSchedule to the hub version.
func (src *AgentSchedule) ConvertTo(hub conversion.Hub) error {
	dst, err := hubAs[*v1beta1.AgentSchedule](hub)
	if err != nil {
		return err
	}
	return Convert_v1alpha1_AgentSchedule_To_v1beta1_AgentSchedule(src, dst, nil)
}

// ConvertFrom converts the hub version to this AgentSchedule.
func (dst *AgentSchedule) ConvertFrom(hub conversion.Hub) error {
	src, err := hubAs[*v1beta1.AgentSchedule](hub)
	if err != nil {
		return err
	}
	return Convert_v1beta1_AgentSchedule_To_v1alpha1_AgentSchedule(src, dst, nil)
}

// ConvertTo converts this AgentTrigger to the hub version.
func (src *AgentTrigger) ConvertTo(hub conversion.Hub) error {
	dst, err := hubAs[*v1beta1.AgentTrigger](hub)
	if err != nil {
		return err
	}
	return Convert_v1alpha1_AgentTrigger_To_v1beta1_AgentTrigger(src, dst, nil)
}

// ConvertFrom converts the hub version to this AgentTrigger.
func (dst *AgentTrigger) ConvertFrom(hub conversion.Hub) error {
	src, err := hubAs[*v1beta1.AgentTrigger](hub)
	if err != nil {
		return err
	}
	return Convert_v1beta1_AgentTrigger_To_v1alpha1_AgentTrigger(src, dst, nil)
}

// ConvertTo converts this AgentBudget to the hub version.
func (src *AgentBudget) ConvertTo(hub conversion.Hub) error {
	dst, err := hubAs[*v1beta1.AgentBudget](hub)
	if err != nil {
		return err
	}
	return Convert_v1alpha1_AgentBudget_To_v1beta1_AgentBudget(src, dst, nil)
}

// ConvertFrom converts the hub version to this AgentBudget.
func (dst *AgentBudget) ConvertFrom(hub conversion.Hub) error {
	src, err := hubAs[*v1beta1.AgentBudget](hub)
	if err != nil {
		return err
	}
	return Convert_v1beta1_AgentBudget_To_v1alpha1_AgentBudget(src, dst, nil)
}

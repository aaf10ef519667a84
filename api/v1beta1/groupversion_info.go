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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The scheme is built with apimachinery alone (not controller-runtime's
// builder) so that the pure engine in loop/, which uses these types as its
// state, never pulls a Kubernetes client in.
var (
	// GroupVersion is group version used to register these objects.
	GroupVersion = schema.GroupVersion{Group: "exagent.io", Version: "v1beta1"}

	// SchemeBuilder registers the exagent types with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types in this group-version to the given scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion,
		&Agent{}, &AgentList{},
		&AgentRun{}, &AgentRunList{},
		&ApprovalDecision{}, &ApprovalDecisionList{},
		&AgentRunSegment{}, &AgentRunSegmentList{},
		&Conversation{}, &ConversationList{},
		&AgentSchedule{}, &AgentScheduleList{},
		&AgentTrigger{}, &AgentTriggerList{},
		&AgentBudget{}, &AgentBudgetList{},
	)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}

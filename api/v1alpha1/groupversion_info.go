package v1alpha1

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
	GroupVersion = schema.GroupVersion{Group: "exagent.io", Version: "v1alpha1"}

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
	)
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}

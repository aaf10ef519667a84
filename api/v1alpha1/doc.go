// Package v1alpha1 holds the exagent.io/v1alpha1 API: Agent (the trusted
// template), AgentRun (one durable run and its journal) and ApprovalDecision
// (one immutable human decision). Types, markers, condition constants and
// small accessors with defaults live here; behaviour lives in loop/.
//
// +kubebuilder:object:generate=true
// +groupName=exagent.io
package v1alpha1

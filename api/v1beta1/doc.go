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

// Package v1beta1 holds the exagent.io/v1beta1 API, the storage version
// and the conversion hub of every kind (hub.go): Agent (the trusted
// template), AgentRun (one durable run and its journal), ApprovalDecision
// (one immutable human decision), AgentRunSegment, Conversation,
// AgentSchedule, AgentTrigger and AgentBudget. Types, markers, condition
// constants and small accessors with defaults live here; behaviour lives
// in loop/. The deprecated v1alpha1 converts to and from these types.
//
// +kubebuilder:object:generate=true
// +groupName=exagent.io
package v1beta1

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

// Package v1alpha1 is the exagent.io/v1alpha1 API, deprecated: served for
// manifests written before v1beta1 (docs/upgrading.md), never stored. It
// holds only the types, their markers and their generated deepcopy and
// conversion code; each kind converts to and from its v1beta1 hub through
// the manager's conversion webhook (conversion.go). Everything the code
// reads and writes is v1beta1.
//
// +kubebuilder:object:generate=true
// +k8s:conversion-gen=github.com/exagent-io/exagent/api/v1beta1
// +groupName=exagent.io
package v1alpha1

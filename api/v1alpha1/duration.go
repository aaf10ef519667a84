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

// Duration is a Go duration string ("90s", "1h30m") or the literal Never.
// The empty string means unset.
// +kubebuilder:validation:MaxLength=32
// +kubebuilder:validation:Pattern=`^(Never|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$`
type Duration string

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

// Package app is the kubectl-approve plugin: one cobra command per verb
// (list, show, approve, deny, cancel, resolve, wait), each an Options struct
// with Complete/Validate/Run over cli-runtime's ConfigFlags and IOStreams.
// It owns how decisions are built from what the user read (payloadHash and
// revision), how the result is waited for, and how errors are shown.
package app

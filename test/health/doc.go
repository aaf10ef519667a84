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

// Package health tests what tools that know nothing of exagent's phases
// make of its objects: kstatus (sigs.k8s.io/cli-utils), the Argo CD health
// checks of config/argocd (run with gopher-lua, as Argo CD does) and the
// Flux healthCheckExprs of config/flux (run with cel-go, as Flux does),
// against sample runs of every phase whose conditions come from the
// engine's own loop.Conditions, sample Agents of every state of their
// check whose conditions come from the Agent controller's own
// controllers.AgentConditions, and applied and rejected decisions.
package health

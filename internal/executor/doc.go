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

// Package executor owns the bounded pool that runs model and tool IO off
// the reconcile workers: a total limit and a per-endpoint limit, so one
// slow endpoint cannot take every slot. It knows nothing of runs; a job
// delivers its own result (the controller's inbox and channel source).
// Endpoint names come from Agents, so an endpoint's bucket lives only
// while a job waits on it or runs in it: memory follows the work in
// flight, never the number of endpoints ever seen.
package executor

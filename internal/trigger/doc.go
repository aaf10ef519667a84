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

// Package trigger owns what an AgentTrigger decides about an incoming
// event before any run exists (DESIGN §19): whether the request is
// authentic (a Standard Webhooks signature within its timestamp tolerance,
// or a bearer token; a delivery id seen before is a replay), what an
// Alertmanager payload says (its firing alerts, by fingerprint), the
// run's input and dedup key rendered from the event by the trigger's CEL
// expressions (never a template over untrusted input; bounded in cost and
// size), and whether the event makes a run (one per dedup key per window,
// at most maxRunsPerHour). Everything here is attacker input handled in a
// process shared by every tenant: bodies are bounded by the caller,
// every table is bounded here, and time is passed in. No Kubernetes
// client, no IO.
package trigger

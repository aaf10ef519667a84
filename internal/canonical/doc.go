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

// Package canonical owns how exagent turns a value into the bytes it
// hashes: RFC 8785 (JCS) canonical JSON and the sha256 forms built on it.
// Payload hashes, fingerprints and AgentRunSegment names are all computed
// here, once, so the engine, the manager, the webhook and the kubectl
// plugin agree on every hash. Pure: no IO, no clock.
package canonical

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

// Package segment owns the AgentRunSegment format (docs/architecture.md §10): what a
// segment's content is and how it is named (the sha256 of its canonical
// JSON), the hash chain a run's status.transcript head closes, and reading
// a sealed transcript back (values by their ref, the whole transcript, the
// journal entries and receipts a chain holds).
//
// Everything that reads segments uses it — the engine (loop, which decides
// what to seal), the manager's segment store, the admission webhook and the
// kubectl plugin — so the chain is verified by one walk, Walk, whatever
// store the segments come from. It is pure: no Kubernetes client, no IO,
// no clock (guarded by loop's TestPurity); a caller reads segments and
// hands them to Walk through a Fetch. It imports neither the engine nor
// its CEL and JSON Schema libraries, so the plugin does not link them.
//
// Files:
//
//	segment.go  the Segment, its content-hash Name, Check, what a message counts
//	chain.go    Walk: the one chain walk; Verify for a chain already in hand
//	values.go   sealed values by ref, the transcript, calls and receipts read back
//	errors.go   CorruptError: a chain that does not hold, worded for a person
package segment

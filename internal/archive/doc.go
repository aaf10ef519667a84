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

// Package archive owns a run's archive: its whole record — spec, final
// status, the whole transcript read back from its segments, every call,
// approval, receipt and decision — written as one CloudEvent
// io.exagent.run.archived, and the POST that delivers it (docs/architecture.md §15,
// docs/retention.md). A conversation is archived as one record per turn,
// each naming the conversation and the turn's place (Record.Conversation).
//
// A record is as large as the run's transcript (limits.maxTranscriptBytes,
// at most 64 MiB, and its escaping), so it is never built in memory: Write
// streams it from the run and its chain, resolving one sealed value at a
// time, and Send generates it twice — once into a counter and the
// Standard Webhooks signature (internal/notify's Signer), once onto the
// wire through a pipe, with the Content-Length the first pass measured.
// What stays in memory is what the caller read (the run and its verified
// chain); the caller bounds how many archives are built at once.
//
// Send dials through the client it is given (the manager's egress
// transport, internal/egress), never follows a redirect, and reads at most
// an excerpt of the sink's answer.
package archive

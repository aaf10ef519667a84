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

// Package anthropictest is a test server of ours that speaks Anthropic's
// Messages API on 127.0.0.1: it checks what the SDK sends (the version
// header, max_tokens, alternating roles, every tool_use answered by a
// tool_result in the next user message, at most 4 cache breakpoints) and
// bills each request by Anthropic's published prompt-caching rules, so a
// test or benchmark can see what a run would pay. Why ours and not a
// peer's (@copilotkit/aimock was considered): the benchmark needs the
// cache accounting applied exactly, and a Go server needs no Node runtime
// in CI; the price is that the wire checks are only as good as ours.
package anthropictest

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

// Package bounded reads what another party sends with a limit: a response
// body wrapped here errors past its bound instead of growing the manager's
// heap with whatever a model endpoint, a tool or an MCP server chose to
// stream (a 3 GiB model answer once took a manager to 23 GiB of memory).
//
// The error past the bound is a *TooLargeError, distinguishable from a
// broken connection, so each caller can say what happened: a model answer
// over its bound fails the run's request clearly; a tool answer over its
// bound after the request was sent leaves the effect's fate unknown. At the
// bound the underlying body is closed at once, so the connection is torn
// down and the sender stops instead of being drained.
package bounded

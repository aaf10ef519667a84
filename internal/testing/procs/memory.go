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

package procs

// Memory is a process's resident set, in bytes (Process.Memory).
type Memory struct {
	// RSS is the resident set now: Anon (heap, stacks) plus File (the
	// binary's pages, shared and reclaimable) plus shared memory.
	RSS, Anon, File int64
	// Peak is the highest RSS over the process's life so far.
	Peak int64
}

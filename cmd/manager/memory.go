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

package main

import (
	"os"
	"runtime/debug"
)

// defaultGCPercent is the manager's GOGC unless the environment sets one.
// Its heap is mostly the informer cache of runs, which Go's default (100)
// lets grow to twice its live size between collections: with 10,000 runs
// waiting for approval the process grew by 12.9 KiB per run at 100 and by
// 9.4 KiB at 50 (BenchmarkFastWaitingRunsProcess), for a little more
// collection work in a process that mostly waits on the apiserver.
const defaultGCPercent = 50

// tuneGC applies defaultGCPercent unless GOGC is set, and says whether
// it did. GOMEMLIMIT, when set (config/manager sets it from the
// container's memory limit), bounds the heap on top of it.
func tuneGC() bool {
	if v, ok := os.LookupEnv("GOGC"); ok && v != "" {
		return false
	}
	debug.SetGCPercent(defaultGCPercent)
	return true
}

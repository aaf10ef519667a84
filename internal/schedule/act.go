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

package schedule

import (
	"slices"
	"time"
)

// Policy is a schedule's concurrencyPolicy.
type Policy string

// The policies (api/v1beta1 ConcurrencyPolicy).
const (
	Allow   Policy = "Allow"
	Forbid  Policy = "Forbid"
	Replace Policy = "Replace"
)

// Action is what a due tick does.
type Action struct {
	// Create: the tick's run is created.
	Create bool
	// Replace are the open runs to cancel first (policy Replace).
	Replace []string
	// SkippedFor names the open runs the tick was skipped for (policy
	// Forbid).
	SkippedFor []string
}

// Act decides what a due tick does while the runs open have not ended.
// tickRun is the tick's own run name: once it exists (created by an
// earlier attempt at this tick) it is neither a reason to skip nor a run
// to replace.
func Act(p Policy, open []string, tickRun string) Action {
	others := slices.DeleteFunc(slices.Clone(open), func(n string) bool { return n == tickRun })
	switch {
	case len(others) == 0:
		return Action{Create: true}
	case p == Forbid:
		return Action{SkippedFor: others}
	case p == Replace:
		return Action{Create: true, Replace: others}
	default:
		return Action{Create: true}
	}
}

// Ended is one ended run of a schedule.
type Ended struct {
	Name      string
	Succeeded bool
	// At orders the runs: when the run ended, else when it was created.
	At time.Time
}

// Prune returns the ended runs beyond the history limits: the oldest
// successful runs past keepSucceeded and the oldest others past
// keepFailed, oldest first.
func Prune(ended []Ended, keepSucceeded, keepFailed int) []string {
	var ok, failed []Ended
	for _, e := range ended {
		if e.Succeeded {
			ok = append(ok, e)
		} else {
			failed = append(failed, e)
		}
	}
	var out []string
	for _, g := range []struct {
		runs []Ended
		keep int
	}{{ok, keepSucceeded}, {failed, keepFailed}} {
		slices.SortFunc(g.runs, func(a, b Ended) int {
			if c := a.At.Compare(b.At); c != 0 {
				return c
			}
			return compareNames(a.Name, b.Name)
		})
		for i := 0; i < len(g.runs)-max(g.keep, 0); i++ {
			out = append(out, g.runs[i].Name)
		}
	}
	return out
}

func compareNames(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

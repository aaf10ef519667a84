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

package trigger

import "time"

// Rate admits at most limit events per window (a sliding window: the
// trigger's maxRunsPerHour). It keeps at most limit instants. Not safe
// for concurrent use.
type Rate struct {
	limit  int
	window time.Duration
	at     []time.Time // admitted instants, oldest first
}

// NewRate admits limit events per window (limit < 1: none).
func NewRate(limit int, window time.Duration) *Rate {
	return &Rate{limit: limit, window: window}
}

// Allow reports whether an event at now is within the rate, and counts
// it when it is.
func (r *Rate) Allow(now time.Time) bool {
	for len(r.at) > 0 && !now.Before(r.at[0].Add(r.window)) {
		r.at = r.at[1:]
	}
	if len(r.at) >= r.limit {
		return false
	}
	r.at = append(r.at, now)
	return true
}

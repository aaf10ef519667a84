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
	"fmt"
	"time"
)

// lookBack bounds how far back Due searches for missed ticks: a schedule
// whose last tick is older (a manager down for more than a year) is read
// from a year ago, which holds a tick of every schedule but a leap-day one.
const lookBack = 366 * 24 * time.Hour

// Due is what Due found.
type Due struct {
	// Tick is the tick to run now: the most recent one not after now that
	// no run was made for yet. Zero when none is due, or when it is too
	// late (Late).
	Tick time.Time
	// Missed is how many earlier ticks were passed over for Tick (or for
	// the late one): only the most recent runs, never a burst.
	Missed int
	// Late is the most recent due tick when it is past the starting
	// deadline (and so is skipped).
	Late time.Time
	// Next is the first tick after now: when to look again.
	Next time.Time
}

// FindDue returns the tick due at now for a schedule whose last run was
// for last (zero: none yet, and the schedule was created at created).
// deadline, when positive, is how late a tick may still start.
func (s *Schedule) FindDue(last, created, now time.Time, deadline time.Duration) Due {
	from := created
	if !last.IsZero() {
		from = last
	}
	if from.Before(now.Add(-lookBack)) {
		from = now.Add(-lookBack)
	}
	var d Due
	t := s.Next(from)
	for ; !t.After(now); t = s.Next(t) {
		if !d.Tick.IsZero() {
			d.Missed++
		}
		d.Tick = t
	}
	d.Next = t
	if !d.Tick.IsZero() && deadline > 0 && now.Sub(d.Tick) > deadline {
		d.Late, d.Tick = d.Tick, time.Time{}
	}
	return d
}

// RunName is the name of the run of schedule name for tick: the same on
// every replica and after every restart, so a second Create of a tick's
// run is AlreadyExists. Minutes since the epoch fit 8 digits until 2160.
func RunName(name string, tick time.Time) string {
	return fmt.Sprintf("%s-%d", name, tick.Unix()/60)
}

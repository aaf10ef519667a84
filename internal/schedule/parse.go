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
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// parser reads the 5-field form and the @yearly…@hourly macros. @every is
// refused by Parse (a period from whenever the manager started is not a
// tick two replicas agree on), and so are CRON_TZ=/TZ= prefixes (the
// time zone is spec.timeZone).
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Schedule is a parsed cron expression in its time zone.
type Schedule struct {
	sched cron.Schedule
	loc   *time.Location
}

// ParseZone returns the IANA time zone named tz; "" is UTC.
func ParseZone(tz string) (*time.Location, error) {
	if tz == "" {
		return time.UTC, nil
	}
	if strings.EqualFold(tz, "local") {
		// The manager's own zone differs between hosts: ticks would too.
		return nil, fmt.Errorf("%q is the manager host's zone, which replicas need not share: name an IANA zone such as Europe/Berlin", tz)
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, fmt.Errorf("unknown IANA time zone %q (e.g. America/New_York, Europe/Berlin, UTC): %w", tz, err)
	}
	return loc, nil
}

// ParseCron checks expr alone (no time zone).
func ParseCron(expr string) (cron.Schedule, error) {
	e := strings.TrimSpace(expr)
	switch {
	case strings.HasPrefix(e, "@every"):
		return nil, fmt.Errorf("%q: @every is not supported: its ticks depend on when the manager started; use a 5-field expression", expr)
	case strings.HasPrefix(e, "TZ=") || strings.HasPrefix(e, "CRON_TZ="):
		return nil, fmt.Errorf("%q: set the time zone in spec.timeZone, not in the expression", expr)
	}
	s, err := parser.Parse(e)
	if err != nil {
		return nil, fmt.Errorf("%q is not a 5-field cron expression (minute hour day-of-month month day-of-week) "+
			"nor one of @yearly, @monthly, @weekly, @daily, @hourly: %w", expr, err)
	}
	return s, nil
}

// Parse reads expr in the time zone tz.
func Parse(expr, tz string) (*Schedule, error) {
	s, err := ParseCron(expr)
	if err != nil {
		return nil, err
	}
	loc, err := ParseZone(tz)
	if err != nil {
		return nil, err
	}
	return &Schedule{sched: s, loc: loc}, nil
}

// Next is the first tick strictly after t. A wall-clock time that happens
// twice (the hour repeated when daylight saving ends) ticks once, at its
// first occurrence; one that never happens (the hour skipped when it
// starts) does not tick that day — as a Kubernetes CronJob.
func (s *Schedule) Next(t time.Time) time.Time {
	n := s.sched.Next(t.In(s.loc))
	if repeated(n) {
		n = s.sched.Next(n)
	}
	return n
}

// repeated reports whether t's wall-clock time already happened earlier
// the same day under a larger UTC offset (the second pass through the
// hour daylight saving repeats).
func repeated(t time.Time) bool {
	if t.IsZero() {
		return false
	}
	_, off := t.Zone()
	_, before := t.Add(-3 * time.Hour).Zone()
	d := time.Duration(before-off) * time.Second
	if d <= 0 {
		return false
	}
	u := t.Add(-d)
	const wall = "2006-01-02 15:04:05"
	return u.Format(wall) == t.Format(wall)
}

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
	"strings"
	"testing"
	"time"
)

func at(t *testing.T, loc, s string) time.Time {
	t.Helper()
	l, err := ParseZone(loc)
	if err != nil {
		t.Fatal(err)
	}
	v, err := time.ParseInLocation("2006-01-02 15:04", s, l)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		expr, tz, err string
	}{
		{expr: "30 2 * * *", tz: "America/New_York"},
		{expr: "@daily"},
		{expr: "@hourly", tz: "UTC"},
		{expr: "0 0 1 * MON-FRI"},
		{expr: "* * * *", err: "not a 5-field cron expression"},
		{expr: "0 0 0 * * *", err: "not a 5-field cron expression"},
		{expr: "61 * * * *", err: "not a 5-field"},
		{expr: "@every 5m", err: "@every is not supported"},
		{expr: "CRON_TZ=UTC 0 * * * *", err: "spec.timeZone"},
		{expr: "@daily", tz: "Mars/Olympus", err: "unknown IANA time zone"},
		{expr: "@daily", tz: "Local", err: "replicas need not share"},
	} {
		_, err := Parse(tc.expr, tc.tz)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("Parse(%q, %q): %v", tc.expr, tc.tz, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Parse(%q, %q) = %v, want an error containing %q", tc.expr, tc.tz, err, tc.err)
		}
	}
}

func TestFindDue(t *testing.T) {
	const utc = "UTC"
	for _, tc := range []struct {
		name             string
		expr, tz         string
		last, created    string
		now              string
		deadline         time.Duration
		tick, late, next string
		missed           int
	}{
		{name: "nothing due yet", expr: "0 * * * *", created: "2026-03-01 10:05", now: "2026-03-01 10:59", next: "2026-03-01 11:00"},
		{name: "the first tick", expr: "0 * * * *", created: "2026-03-01 10:05", now: "2026-03-01 11:00", tick: "2026-03-01 11:00", next: "2026-03-01 12:00"},
		{name: "already run", expr: "0 * * * *", last: "2026-03-01 11:00", created: "2026-03-01 10:05", now: "2026-03-01 11:30", next: "2026-03-01 12:00"},
		{name: "missed ticks run once", expr: "0 * * * *", last: "2026-03-01 11:00", now: "2026-03-01 15:10",
			tick: "2026-03-01 15:00", missed: 3, next: "2026-03-01 16:00"},
		{name: "within the deadline", expr: "0 * * * *", last: "2026-03-01 11:00", now: "2026-03-01 15:10", deadline: 15 * time.Minute,
			tick: "2026-03-01 15:00", missed: 3, next: "2026-03-01 16:00"},
		{name: "past the deadline", expr: "0 * * * *", last: "2026-03-01 11:00", now: "2026-03-01 15:10", deadline: 5 * time.Minute,
			late: "2026-03-01 15:00", missed: 3, next: "2026-03-01 16:00"},
		{name: "spring forward: 02:30 does not exist", expr: "30 2 * * *", tz: "America/New_York",
			last: "2026-03-07 02:30", now: "2026-03-08 12:00", next: "2026-03-09 02:30"},
		{name: "fall back: 01:30 happens twice, runs once", expr: "30 1 * * *", tz: "America/New_York",
			last: "2026-10-31 01:30", now: "2026-11-01 12:00", tick: "2026-11-01 01:30", next: "2026-11-02 01:30"},
		{name: "a down year", expr: "@daily", last: "2020-01-01 00:00", now: "2026-03-01 12:00", tick: "2026-03-01 00:00", missed: 365, next: "2026-03-02 00:00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tz := tc.tz
			if tz == "" {
				tz = utc
			}
			s, err := Parse(tc.expr, tz)
			if err != nil {
				t.Fatal(err)
			}
			var last, created time.Time
			if tc.last != "" {
				last = at(t, tz, tc.last)
			}
			if tc.created != "" {
				created = at(t, tz, tc.created)
			}
			d := s.FindDue(last, created, at(t, tz, tc.now), tc.deadline)
			check := func(what string, got time.Time, want string) {
				t.Helper()
				if want == "" {
					if !got.IsZero() {
						t.Errorf("%s = %v, want none", what, got)
					}
					return
				}
				if w := at(t, tz, want); !got.Equal(w) {
					t.Errorf("%s = %v, want %v", what, got, w)
				}
			}
			check("tick", d.Tick, tc.tick)
			check("late", d.Late, tc.late)
			check("next", d.Next, tc.next)
			if d.Missed != tc.missed {
				t.Errorf("missed = %d, want %d", d.Missed, tc.missed)
			}
		})
	}
}

func TestRunName(t *testing.T) {
	tick := time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC)
	if got, want := RunName("nightly", tick), "nightly-29549220"; got != want {
		t.Errorf("RunName = %q, want %q", got, want)
	}
}

func TestAct(t *testing.T) {
	for _, tc := range []struct {
		p    Policy
		open []string
		want Action
	}{
		{p: Forbid, want: Action{Create: true}},
		{p: Forbid, open: []string{"s-1"}, want: Action{SkippedFor: []string{"s-1"}}},
		{p: Forbid, open: []string{"s-2"}, want: Action{Create: true}}, // its own run: a retry of this tick
		{p: Allow, open: []string{"s-1"}, want: Action{Create: true}},
		{p: Replace, open: []string{"s-1", "s-2"}, want: Action{Create: true, Replace: []string{"s-1"}}},
	} {
		got := Act(tc.p, tc.open, "s-2")
		if got.Create != tc.want.Create || !slices.Equal(got.Replace, tc.want.Replace) || !slices.Equal(got.SkippedFor, tc.want.SkippedFor) {
			t.Errorf("Act(%s, %v) = %+v, want %+v", tc.p, tc.open, got, tc.want)
		}
	}
}

func TestPrune(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var ended []Ended
	for i, ok := range []bool{true, false, true, true, false, true} {
		ended = append(ended, Ended{Name: string(rune('a' + i)), Succeeded: ok, At: base.Add(time.Duration(i) * time.Hour)})
	}
	if got, want := Prune(ended, 3, 1), []string{"a", "b"}; !slices.Equal(got, want) {
		t.Errorf("Prune(3, 1) = %v, want %v", got, want)
	}
	if got, want := Prune(ended, 0, 0), []string{"a", "c", "d", "f", "b", "e"}; !slices.Equal(got, want) {
		t.Errorf("Prune(0, 0) = %v, want %v", got, want)
	}
	if got := Prune(ended, 10, 10); len(got) != 0 {
		t.Errorf("Prune(10, 10) = %v, want none", got)
	}
}

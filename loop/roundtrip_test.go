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

package loop

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// TestJSONRoundTrip: the status is the continuation, so what the apiserver
// stores must decode to the very state the engine produced — including
// times, which the engine truncates to what their JSON form keeps.
func TestJSONRoundTrip(t *testing.T) {
	odd := 123456789 * time.Nanosecond // sub-microsecond noise in every instant
	states := map[string]func(t *testing.T) Status{
		"running with a model intent": func(t *testing.T) Status {
			h := newHarness(t, defaultEnv(t))
			h.now = h.now.Add(odd)
			h.claim(w1)
			h.step()
			return h.s
		},
		"tool calls in flight, outcome confirmed": func(t *testing.T) Status {
			h, _ := inFlightRun(t)
			h.now = h.now.Add(odd)
			h.outcome("s1", ResultSucceeded, "é\u0000<x>")
			return h.s
		},
		"paused, decided, with a receipt": func(t *testing.T) Status {
			h, s := paused(t)
			s, _, err := Approve(s, h.env, approveCmd(t, s, "p1", "op", "alice"), t0.Add(odd))
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		"uncertain, resolved, with conditions": func(t *testing.T) Status {
			h, s := uncertainRun(t)
			c := s.Calls[0]
			s, _, err := Resolve(s, h.env, DecisionCmd{OperationID: "r", CallID: c.ID, PayloadHash: c.PayloadHash, Revision: s.Revision,
				Actor: exagentv1.Actor{Username: "a", Groups: []string{"g"}}, Outcome: exagentv1.ResolveSucceeded, Evidence: "e"}, t0.Add(odd))
			if err != nil {
				t.Fatal(err)
			}
			s.Conditions = Conditions(s, 2, t0.Add(odd))
			return s
		},
		"golden runs end to end": func(t *testing.T) Status {
			h, _ := paused(t)
			h.now = h.now.Add(odd)
			h.approveAll()
			h.claim("w2")
			h.step()
			h.outcome("p1", ResultSucceeded, "paid")
			h.step()
			h.respond(text("done"))
			h.step()
			return h.s
		},
	}
	for name, build := range states {
		t.Run(name, func(t *testing.T) {
			s := build(t)
			b, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			var back Status
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(s, back); diff != "" {
				t.Errorf("decode(encode(s)) differs (-want +got):\n%s", diff)
			}
			again, _ := json.Marshal(back)
			if string(again) != string(b) {
				t.Errorf("encoding is not stable:\n%s\n%s", b, again)
			}
		})
	}
}

// A decoded state drives the engine exactly like the original: a new
// process resumes from bytes alone.
func TestResumeFromBytes(t *testing.T) {
	h, s := paused(t)
	b, _ := json.Marshal(s)
	var fresh Status
	if err := json.Unmarshal(b, &fresh); err != nil {
		t.Fatal(err)
	}
	d := approveCmd(t, s, "p1", "op", "alice")
	a, ra, errA := Approve(s, h.env, d, t0.Add(time.Hour))
	bb, rb, errB := Approve(fresh, h.env, d, t0.Add(time.Hour))
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	if diff := cmp.Diff(a, bb); diff != "" {
		t.Errorf("state (-original +decoded):\n%s", diff)
	}
	if diff := cmp.Diff(ra, rb); diff != "" {
		t.Errorf("receipt (-original +decoded):\n%s", diff)
	}
}

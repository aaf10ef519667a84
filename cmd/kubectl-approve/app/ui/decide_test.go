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

package ui

import (
	"strings"
	"testing"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

func TestAnswerOf(t *testing.T) {
	tc := map[string]struct {
		action     exagentv1.AnswerAction
		form       formState
		wantAction exagentv1.AnswerAction
		wantAnswer string
		wantMsg    string
	}{
		"text":                 {action: "Accept", form: formState{Answer: "eu-west-1", As: "text"}, wantAction: "Accept", wantAnswer: `"eu-west-1"`},
		"text is the default":  {action: "Accept", form: formState{Answer: `{"a":1}`}, wantAction: "Accept", wantAnswer: `"{\"a\":1}"`},
		"json":                 {action: "Accept", form: formState{Answer: ` {"cluster":"eu"} `, As: "json"}, wantAction: "Accept", wantAnswer: `{"cluster":"eu"}`},
		"a choice wins":        {action: "Accept", form: formState{Choice: "us", Answer: "ignored"}, wantAction: "Accept", wantAnswer: `"us"`},
		"invalid json":         {action: "Accept", form: formState{Answer: "{nope", As: "json"}, wantMsg: "not valid JSON"},
		"nothing":              {action: "Accept", form: formState{Answer: "  "}, wantMsg: "Give an answer"},
		"decline carries none": {action: "Decline", form: formState{Answer: "x"}, wantAction: "Decline"},
		"cancel carries none":  {action: "Cancel", wantAction: "Cancel"},
		"unknown action":       {action: "Shrug", wantMsg: `Unknown answer action "Shrug"`},
		"too big":              {action: "Accept", form: formState{Answer: strings.Repeat("x", exagentv1.MaxValueBytes)}, wantMsg: "more than"},
	}
	for name, tc := range tc {
		t.Run(name, func(t *testing.T) {
			action, answer, msg := answerOf(tc.action, tc.form)
			if tc.wantMsg != "" {
				if !strings.Contains(msg, tc.wantMsg) {
					t.Fatalf("answerOf refused with %q, want %q", msg, tc.wantMsg)
				}
				return
			}
			if msg != "" || action != tc.wantAction || string(answer) != tc.wantAnswer {
				t.Fatalf("answerOf = %s %s %q, want %s %s", action, answer, msg, tc.wantAction, tc.wantAnswer)
			}
		})
	}
}

func TestCheckRequest(t *testing.T) {
	tc := map[string]struct {
		req  DecideRequest
		want string
	}{
		"approve":              {req: DecideRequest{Kind: "Approve", ApprovalID: "a", Reason: "ok"}},
		"approve, no reason":   {req: DecideRequest{Kind: "Approve", ApprovalID: "a"}, want: "A reason is required"},
		"deny, no approval":    {req: DecideRequest{Kind: "Deny", Reason: "no"}, want: "Name the approval"},
		"resolve":              {req: DecideRequest{Kind: "Resolve", CallID: "c", Outcome: "Retry", Evidence: "ticket 1"}},
		"resolve, no outcome":  {req: DecideRequest{Kind: "Resolve", CallID: "c", Evidence: "x"}, want: "Choose what really happened"},
		"resolve, no evidence": {req: DecideRequest{Kind: "Resolve", CallID: "c", Outcome: "Failed"}, want: "Evidence is required"},
		"answer":               {req: DecideRequest{Kind: "Answer", ApprovalID: "q"}},
		"cancel is not here":   {req: DecideRequest{Kind: "Cancel"}, want: "Unknown decision"},
		"reason too long":      {req: DecideRequest{Kind: "Approve", ApprovalID: "a", Reason: strings.Repeat("r", maxText+1)}, want: "at most"},
	}
	for name, tc := range tc {
		t.Run(name, func(t *testing.T) {
			got := checkRequest(tc.req)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Fatalf("checkRequest = %q, want %q", got, tc.want)
			}
		})
	}
}

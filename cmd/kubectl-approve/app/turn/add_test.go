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

package turn

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// TestParticipantAgent: a turn is taken by the conversation's agentRef,
// or by the Agent of the participant named — a human participant's turn
// (a question to them) under the agentRef; an unknown name is refused
// with what there is.
func TestParticipantAgent(t *testing.T) {
	conv := &exagentv1.Conversation{Spec: exagentv1.ConversationSpec{
		AgentRef: exagentv1.LocalObjectReference{Name: "triage"},
		Participants: []exagentv1.Participant{
			{Name: "fixer", AgentRef: &exagentv1.LocalObjectReference{Name: "fixer-agent"}},
			{Name: "oncall", Human: &exagentv1.Approvers{Users: []string{"alice"}}},
		},
	}}
	conv.Name = "support"
	tests := map[string]struct {
		participant, want, wantErr string
	}{
		"default":       {want: "triage"},
		"a participant": {participant: "fixer", want: "fixer-agent"},
		"a person":      {participant: "oncall", want: "triage"}, // their question, under the agentRef
		"unknown":       {participant: "nobody", wantErr: "has no participant \"nobody\" (it has: fixer, oncall)"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ParticipantAgent(conv, tc.participant)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %q, %v; want an error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestBuild: a turn names its conversation and participant, runs the
// participant's Agent, carries the text as its input and no requester
// (admission stamps who created it).
func TestBuild(t *testing.T) {
	conv := &exagentv1.Conversation{Spec: exagentv1.ConversationSpec{
		AgentRef: exagentv1.LocalObjectReference{Name: "triage"},
		Participants: []exagentv1.Participant{{Name: "fixer", AgentRef: &exagentv1.LocalObjectReference{Name: "fixer-agent"}},
			{Name: "oncall", Human: &exagentv1.Approvers{Users: []string{"alice"}, Groups: []string{"sre"}}}},
	}}
	conv.Name, conv.Namespace = "support", "demo"
	run, err := Build(conv, "fixer", "restart it")
	if err != nil {
		t.Fatal(err)
	}
	if run.Namespace != "demo" || run.GenerateName != "support-" || run.Spec.AgentRef.Name != "fixer-agent" || run.Spec.Input != "restart it" ||
		run.Spec.ConversationRef == nil || *run.Spec.ConversationRef != (exagentv1.ConversationRef{Name: "support", Participant: "fixer"}) ||
		run.Spec.RequestedBy != nil {
		t.Fatalf("turn %+v", run)
	}
	got := Choices(conv)
	if len(got) != 3 || got[0].Name != "" || got[0].Agent != "triage" || got[1].Agent != "fixer-agent" ||
		!got[2].Human || strings.Join(got[2].People, ",") != "alice,sre" || got[2].Agent != "triage" {
		t.Errorf("Choices = %+v, want the agentRef, fixer and the people of oncall", got)
	}
}

// TestTurnNamePrefix: the generated name of a turn stays a valid object
// name whatever the conversation's name.
func TestTurnNamePrefix(t *testing.T) {
	for _, conv := range []string{"support", strings.Repeat("a", 253), strings.Repeat("b", 246) + "-.-x"} {
		name := namePrefix(conv) + "abcde"
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			t.Errorf("turn name for conversation of %d characters: %v", len(conv), errs)
		}
	}
}

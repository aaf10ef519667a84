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

package controllers

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// TestLastTurns: a turn this process ended is given back only for the
// very version the cache holds; a live turn, a run that is no turn, or a
// tail too large is not kept; memory holds at most maxLastTurns
// conversations.
func TestLastTurns(t *testing.T) {
	turn := func(conv, name, rv string, phase exagentv1.RunPhase, content string) *exagentv1.AgentRun {
		r := &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), ResourceVersion: rv}}
		if conv != "" {
			r.Spec.ConversationRef = &exagentv1.ConversationRef{Name: conv}
		}
		r.Status.Phase = phase
		r.Status.History = []exagentv1.Message{{Role: exagentv1.RoleAssistant, Content: content}}
		return r
	}
	stripped := func(r *exagentv1.AgentRun) *exagentv1.AgentRun {
		c := r.DeepCopy()
		c.Status.History = nil
		return c
	}
	l := newLastTurns()
	done := turn("c", "c-t1", "7", exagentv1.PhaseSucceeded, "answer")
	l.ended(done)
	if got, ok := l.get(stripped(done)); !ok || got.Status.History[0].Content != "answer" {
		t.Fatalf("the same version: %v %+v", ok, got)
	}
	later := stripped(done)
	later.ResourceVersion = "8"
	if _, ok := l.get(later); ok {
		t.Error("a later version was given the remembered copy")
	}
	other := stripped(done)
	other.UID = "another"
	if _, ok := l.get(other); ok {
		t.Error("a re-created turn was given its predecessor's copy")
	}
	for name, r := range map[string]*exagentv1.AgentRun{
		"live":    turn("d", "d-t1", "1", exagentv1.PhaseRunning, "x"),
		"no turn": turn("", "e", "1", exagentv1.PhaseSucceeded, "x"),
		"too big": turn("f", "f-t1", "1", exagentv1.PhaseSucceeded, strings.Repeat("x", maxLastTurnTail+1)),
	} {
		l.ended(r)
		if _, ok := l.get(stripped(r)); ok {
			t.Errorf("%s: remembered", name)
		}
	}
	for i := range maxLastTurns + 10 {
		l.ended(turn(fmt.Sprintf("conv-%d", i), fmt.Sprintf("conv-%d-t1", i), "1", exagentv1.PhaseSucceeded, "a"))
	}
	if len(l.by) != maxLastTurns || len(l.order) != maxLastTurns {
		t.Errorf("%d conversations remembered (%d in order), want %d", len(l.by), len(l.order), maxLastTurns)
	}
	if _, ok := l.get(stripped(done)); ok {
		t.Error("the oldest conversation was not evicted")
	}
}

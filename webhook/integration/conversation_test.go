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

package integration_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// TestConversationTurnAdmission: a turn is admitted only into a
// Conversation that exists, running one of its participants, within
// maxTurns; followUps decides, from the stamped requester, who may add a
// turn after the first (SameRequester: only the one who started it;
// Approvers: also who may approve runs of its Agent; Anyone); doubleText
// Reject refuses a turn while another is open, naming it. Each refusal
// names the field and what to do. Admission stamps the conversation label.
func TestConversationTurnAdmission(t *testing.T) {
	s := newScenario(t)
	bind(t, s.ns, "olivia", "ClusterRole", "cluster-admin") // may approve runs of payments
	createRole(t, s.ns, "run-writer",
		rbacv1.PolicyRule{APIGroups: []string{"exagent.io"}, Resources: []string{"agentruns"}, Verbs: []string{"create", "get", "list"}})
	bind(t, s.ns, "grace", "Role", "run-writer") // may create runs, may not approve runs of payments

	conv := func(name string, mut func(*exagentv1.ConversationSpec)) {
		t.Helper()
		c := &exagentv1.Conversation{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns},
			Spec: exagentv1.ConversationSpec{AgentRef: exagentv1.LocalObjectReference{Name: "payments"}}}
		if mut != nil {
			mut(&c.Spec)
		}
		if err := admin.Create(t.Context(), c); err != nil {
			t.Fatal(err)
		}
	}
	turn := func(c client.Client, name, conv, agent string) (*exagentv1.AgentRun, error) {
		r := &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns},
			Spec: exagentv1.AgentRunSpec{AgentRef: exagentv1.LocalObjectReference{Name: agent}, Input: "hello",
				ConversationRef: &exagentv1.ConversationRef{Name: conv}}}
		return r, c.Create(t.Context(), r)
	}
	mustRefuse := func(err error, want ...string) {
		t.Helper()
		if err == nil {
			t.Fatalf("admitted, want refused with %q", want)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Fatalf("refused with %v, want it to say %q", err, w)
			}
		}
	}
	dave := as(t, "dave")

	_, err := turn(dave, "nowhere-t1", "nowhere", "payments")
	mustRefuse(err, "spec.conversationRef.name", "create the Conversation before its turns")

	conv("same", nil)
	_, err = turn(dave, "same-other-agent", "same", "billing")
	mustRefuse(err, "spec.agentRef.name", "not a participant", "payments")
	first, err := turn(dave, "same-t1", "same", "payments")
	if err != nil {
		t.Fatal(err)
	}
	if first.Labels[exagentv1.LabelConversation] != "same" {
		t.Errorf("labels %v, want %s=same", first.Labels, exagentv1.LabelConversation)
	}
	if o, ok := first.ConversationOwner(); !ok || o.UID == "" || o.Controller != nil {
		t.Errorf("owners %+v, want the Conversation as a plain owner", first.OwnerReferences)
	}
	if _, err := turn(dave, "same-t2", "same", "payments"); err != nil {
		t.Fatalf("the first requester's follow-up (Enqueue): %v", err)
	}
	_, err = turn(as(t, "olivia"), "same-olivia", "same", "payments")
	mustRefuse(err, "takes follow-ups only from them", "dave")

	conv("approvers", func(s *exagentv1.ConversationSpec) { s.FollowUps = exagentv1.FollowUpsApprovers })
	if _, err := turn(dave, "approvers-t1", "approvers", "payments"); err != nil {
		t.Fatal(err)
	}
	if _, err := turn(as(t, "olivia"), "approvers-olivia", "approvers", "payments"); err != nil {
		t.Fatalf("an approver's follow-up under Approvers: %v", err)
	}
	_, err = turn(as(t, "grace"), "approvers-grace", "approvers", "payments")
	mustRefuse(err, "who may approve runs of agent")

	conv("anyone", func(s *exagentv1.ConversationSpec) {
		s.FollowUps = exagentv1.FollowUpsAnyone
		s.Limits.MaxTurns = ptr.To[int32](2)
	})
	if _, err := turn(dave, "anyone-t1", "anyone", "payments"); err != nil {
		t.Fatal(err)
	}
	if _, err := turn(as(t, "grace"), "anyone-grace", "anyone", "payments"); err != nil {
		t.Fatalf("anyone's follow-up under Anyone: %v", err)
	}
	_, err = turn(dave, "anyone-t3", "anyone", "payments")
	mustRefuse(err, "has taken its 2 turns", "maxTurns")

	conv("reject", func(s *exagentv1.ConversationSpec) { s.DoubleText = exagentv1.DoubleTextReject })
	if _, err := turn(dave, "reject-t1", "reject", "payments"); err != nil {
		t.Fatal(err)
	}
	_, err = turn(dave, "reject-t2", "reject", "payments")
	mustRefuse(err, "turn reject-t1", "still open", "doubleText is Reject")
}

// TestConversationUpdateWhileATurnIsOpen: while a turn is open, a change of
// who takes turns — the agentRef, a participant removed or given another
// Agent — is refused, naming the turn; adding a participant, or suspending,
// is not; once the turn ended, the agentRef may change.
func TestConversationUpdateWhileATurnIsOpen(t *testing.T) {
	s := newScenario(t)
	c := &exagentv1.Conversation{ObjectMeta: metav1.ObjectMeta{Name: "ops", Namespace: s.ns},
		Spec: exagentv1.ConversationSpec{AgentRef: exagentv1.LocalObjectReference{Name: "payments"},
			Participants: []exagentv1.Participant{{Name: "billing", AgentRef: &exagentv1.LocalObjectReference{Name: "billing"}}}}}
	if err := admin.Create(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	turn := &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Name: "ops-t1", Namespace: s.ns},
		Spec: exagentv1.AgentRunSpec{AgentRef: exagentv1.LocalObjectReference{Name: "payments"}, Input: "hello",
			ConversationRef: &exagentv1.ConversationRef{Name: "ops"}}}
	if err := as(t, "dave").Create(t.Context(), turn); err != nil {
		t.Fatal(err)
	}
	update := func(mut func(*exagentv1.ConversationSpec)) error {
		t.Helper()
		cur := get(t, s.ns, "ops", &exagentv1.Conversation{})
		mut(&cur.Spec)
		return admin.Update(t.Context(), cur)
	}
	for name, mut := range map[string]func(*exagentv1.ConversationSpec){
		"spec.agentRef":                       func(s *exagentv1.ConversationSpec) { s.AgentRef.Name = "billing" },
		"spec.participants[billing]":          func(s *exagentv1.ConversationSpec) { s.Participants = nil },
		"spec.participants[billing].agentRef": func(s *exagentv1.ConversationSpec) { s.Participants[0].AgentRef.Name = "payments" },
	} {
		if err := update(mut); err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "turn ops-t1 is open") {
			t.Errorf("changing %s while ops-t1 is open: got %v, want refused naming the field and the turn", name, err)
		}
	}
	if err := update(func(s *exagentv1.ConversationSpec) {
		s.Participants = append(s.Participants, exagentv1.Participant{Name: "oncall", Human: &exagentv1.Approvers{Users: []string{"alice"}}})
		s.Suspend = true
	}); err != nil {
		t.Fatalf("adding a participant and suspending while a turn is open: %v", err)
	}
	ended := get(t, s.ns, "ops-t1", &exagentv1.AgentRun{})
	ended.Status.Phase = exagentv1.PhaseSucceeded
	if err := admin.Status().Update(t.Context(), ended); err != nil {
		t.Fatal(err)
	}
	if err := update(func(s *exagentv1.ConversationSpec) { s.AgentRef.Name = "billing" }); err != nil {
		t.Fatalf("changing the agentRef once the turn ended: %v", err)
	}
}

// TestConversationSessionAdmission: RoundRobin needs maxTurns and forkOf
// is immutable (the CRD says which field and why); only the manager
// creates a RoundRobin conversation's later turns, carrying the first
// turn's requester (sealed), never the first turn nor a turn of an
// Explicit conversation; a turn naming a participant gets its Agent (a
// human one the conversation's), an unknown participant is refused naming
// those listed; an ended conversation takes no turn.
func TestConversationSessionAdmission(t *testing.T) {
	s := newScenario(t)
	dave := as(t, "dave")
	create := func(name string, mut func(*exagentv1.ConversationSpec)) error {
		c := &exagentv1.Conversation{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns},
			Spec: exagentv1.ConversationSpec{AgentRef: exagentv1.LocalObjectReference{Name: "payments"},
				Participants: []exagentv1.Participant{
					{Name: "payments", AgentRef: &exagentv1.LocalObjectReference{Name: "payments"}},
					{Name: "billing", AgentRef: &exagentv1.LocalObjectReference{Name: "billing"}},
					{Name: "oncall", Human: &exagentv1.Approvers{Users: []string{"erin"}}},
				}}}
		mut(&c.Spec)
		return admin.Create(t.Context(), c)
	}
	turn := func(c client.Client, name, conv, participant, agent string, requester *exagentv1.Actor) (*exagentv1.AgentRun, error) {
		r := &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns},
			Spec: exagentv1.AgentRunSpec{AgentRef: exagentv1.LocalObjectReference{Name: agent}, Input: "go on",
				ConversationRef: &exagentv1.ConversationRef{Name: conv, Participant: participant}, RequestedBy: requester}}
		return r, c.Create(t.Context(), r)
	}
	refused := func(err error, want ...string) {
		t.Helper()
		if err == nil {
			t.Fatalf("admitted, want refused with %q", want)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Fatalf("refused with %v, want it to say %q", err, w)
			}
		}
	}

	refused(create("rr-unbounded", func(c *exagentv1.ConversationSpec) { c.TurnPolicy = exagentv1.TurnRoundRobin }),
		"turnPolicy RoundRobin needs spec.limits.maxTurns")
	if err := create("rr", func(c *exagentv1.ConversationSpec) {
		c.TurnPolicy, c.Limits.MaxTurns = exagentv1.TurnRoundRobin, ptr.To[int32](6)
	}); err != nil {
		t.Fatal(err)
	}
	_, err := turn(admin, "rr-t1", "rr", "payments", "payments", &exagentv1.Actor{Username: "dave"})
	refused(err, "first turn is a person's")
	first, err := turn(dave, "rr-t1", "rr", "payments", "payments", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = turn(admin, "rr-t2", "rr", "billing", "billing", &exagentv1.Actor{Username: "olivia"})
	refused(err, "spec.requestedBy", "rr-t1")
	second, err := turn(admin, "rr-t2", "rr", "billing", "billing", first.Spec.RequestedBy)
	if err != nil {
		t.Fatalf("the manager's RoundRobin turn: %v", err)
	}
	if err := signer.VerifyRequester(second); err != nil {
		t.Errorf("the RoundRobin turn's requester is not sealed: %v", err)
	}

	if err := create("explicit", func(*exagentv1.ConversationSpec) {}); err != nil {
		t.Fatal(err)
	}
	if _, err := turn(dave, "explicit-t1", "explicit", "", "payments", nil); err != nil {
		t.Fatal(err)
	}
	_, err = turn(admin, "explicit-t2", "explicit", "billing", "billing", &exagentv1.Actor{Username: "dave"})
	refused(err, "only in RoundRobin conversations")
	human, err := turn(dave, "explicit-t2", "explicit", "oncall", "", nil)
	if err != nil {
		t.Fatalf("a human participant's turn naming only the participant: %v", err)
	}
	if human.Spec.AgentRef.Name != "payments" {
		t.Errorf("the human turn's agentRef %q, want the conversation's (payments)", human.Spec.AgentRef.Name)
	}
	byName, err := turn(dave, "explicit-t3", "explicit", "billing", "", nil)
	if err != nil || byName.Spec.AgentRef.Name != "billing" {
		t.Fatalf("a turn naming Agent participant billing: agentRef %q, %v", byName.Spec.AgentRef.Name, err)
	}
	_, err = turn(dave, "explicit-x", "explicit", "nobody", "", nil)
	refused(err, "spec.conversationRef.participant", "nobody", "oncall")
	_, err = turn(dave, "explicit-y", "explicit", "billing", "payments", nil)
	refused(err, "spec.agentRef.name", "participant billing", "Agent billing")

	refused(func() error {
		cur := get(t, s.ns, "explicit", &exagentv1.Conversation{})
		cur.Spec.ForkOf = &exagentv1.ConversationFork{Name: "rr", Turn: 1}
		return admin.Update(t.Context(), cur)
	}(), "spec.forkOf is immutable")

	ender := get(t, s.ns, "explicit-t1", &exagentv1.AgentRun{})
	ender.Status.Phase = exagentv1.PhaseSucceeded
	ender.Status.Turn = &exagentv1.TurnStatus{Index: 1, EndedConversation: exagentv1.EndedByTool}
	if err := admin.Status().Update(t.Context(), ender); err != nil {
		t.Fatal(err)
	}
	_, err = turn(dave, "explicit-t9", "explicit", "", "payments", nil)
	refused(err, "has ended", "explicit-t1")
}

// TestConversationSamplesAdmitted: the documented samples of each turn
// policy and of a fork pass the CRDs' schemas and admission as written
// (their namespace aside); the turns are dave's.
func TestConversationSamplesAdmitted(t *testing.T) {
	s := newScenario(t)
	for _, file := range []string{"explicit.yaml", "roundrobin.yaml", "fork.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "config", "samples", "conversations", file))
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(b), "\n---\n") {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			u.SetNamespace(s.ns)
			c := admin
			if u.GetKind() == "AgentRun" {
				c = as(t, "dave")
			}
			if err := c.Create(t.Context(), u); err != nil && (u.GetKind() != "Agent" || !apierrors.IsAlreadyExists(err)) {
				t.Errorf("%s: %s %s refused: %v", file, u.GetKind(), u.GetName(), err)
			}
		}
	}
}

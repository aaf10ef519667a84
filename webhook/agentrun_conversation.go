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

package webhook

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/authz"
	"github.com/exagent-io/exagent/loop"
)

// +kubebuilder:rbac:groups=exagent.io,resources=conversations,verbs=get

// stampConversation labels a turn with its conversation's name
// (exagentv1.LabelConversation, overwriting what a client wrote) — its
// turns are listed by it — and makes the Conversation its owner (the
// garbage collector deletes a conversation's turns with it); an owner of
// kind Conversation the client wrote is replaced. A Conversation that
// does not exist is refused by validation.
func (w *AgentRunWebhook) stampConversation(ctx context.Context, run *exagentv1.AgentRun) error {
	run.OwnerReferences = slices.DeleteFunc(run.OwnerReferences, func(o metav1.OwnerReference) bool {
		return o.Kind == "Conversation" && o.APIVersion == exagentv1.GroupVersion.String()
	})
	ref := run.Spec.ConversationRef
	if ref == nil {
		if run.Labels != nil {
			delete(run.Labels, exagentv1.LabelConversation)
		}
		delete(run.Annotations, exagentv1.AnnotationTurnCreated)
		return nil
	}
	if run.Labels == nil {
		run.Labels = map[string]string{}
	}
	run.Labels[exagentv1.LabelConversation] = exagentv1.LabelValue(ref.Name)
	if run.Annotations == nil {
		run.Annotations = map[string]string{}
	}
	run.Annotations[exagentv1.AnnotationTurnCreated] = time.Now().UTC().Format(time.RFC3339Nano)
	conv := &exagentv1.Conversation{}
	if err := w.Reader.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: ref.Name}, conv); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return apierrors.NewInternalError(fmt.Errorf("reading Conversation %s/%s: %w", run.Namespace, ref.Name, err))
	}
	run.OwnerReferences = append(run.OwnerReferences, exagentv1.ConversationOwnerReference(conv))
	defaultParticipant(conv, run)
	return nil
}

// checkConversation admits a turn (a run with spec.conversationRef) only
// into a Conversation that exists, running one of its participants, within
// its maxTurns, by someone its followUps lets add a turn, and — with
// doubleText Reject — only when no turn is open. Who may continue a
// conversation is decided here, from the stamped requester: continuing
// someone's conversation reads its whole history.
func (w *AgentRunWebhook) checkConversation(ctx context.Context, req admission.Request, run *exagentv1.AgentRun) (*field.Error, error) {
	ref := run.Spec.ConversationRef
	if ref == nil {
		return nil, nil
	}
	path := field.NewPath("spec", "conversationRef", "name")
	conv := &exagentv1.Conversation{}
	if err := w.Reader.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: ref.Name}, conv); err != nil {
		if apierrors.IsNotFound(err) {
			return field.NotFound(path, fmt.Sprintf("%s: create the Conversation before its turns", ref.Name)), nil
		}
		return nil, fmt.Errorf("reading Conversation %s/%s: %w", run.Namespace, ref.Name, err)
	}
	if ferr := checkParticipant(conv, run); ferr != nil {
		return ferr, nil
	}
	turns, err := w.turnsOf(ctx, conv)
	if err != nil {
		return nil, err
	}
	if ended := endedBy(turns); ended != "" {
		return field.Forbidden(path, fmt.Sprintf("conversation %q has ended (turn %s ended it): start a new one", conv.Name, ended)), nil
	}
	if w.managerTurn(run, authz.ActorFromUserInfo(req.UserInfo)) {
		return checkManagerTurn(conv, turns, run), nil
	}
	if max := conv.Spec.Limits.MaxTurns; max != nil && len(turns) >= int(*max) {
		return field.Forbidden(path, fmt.Sprintf("conversation %q has taken its %d turns (spec.limits.maxTurns): start a new one", conv.Name, *max)), nil
	}
	if conv.Spec.DoubleText == exagentv1.DoubleTextReject {
		if open, _, _ := loop.TurnGate(loop.TurnViews(turns), run.Name); open != "" {
			return field.Forbidden(path, fmt.Sprintf(
				"turn %s of conversation %q is still open and the conversation's doubleText is Reject: wait for it to end, or answer what it waits for",
				open, conv.Name)), nil
		}
	}
	return w.checkFollowUp(ctx, req, conv, turns, run)
}

// checkFollowUp applies spec.followUps: the first turn's requester may
// always add a turn; with Approvers, so may who may approve runs of the
// conversation's Agent; with Anyone, anyone who may create the run.
func (w *AgentRunWebhook) checkFollowUp(ctx context.Context, req admission.Request, conv *exagentv1.Conversation,
	turns []exagentv1.AgentRun, run *exagentv1.AgentRun) (*field.Error, error) {
	if len(turns) == 0 || conv.Spec.FollowUps == exagentv1.FollowUpsAnyone {
		return nil, nil // the first turn starts the conversation
	}
	first := firstTurn(turns)
	owner := ""
	if first.Spec.RequestedBy != nil {
		owner = first.Spec.RequestedBy.Username
	}
	me := authz.ActorFromUserInfo(req.UserInfo)
	if owner != "" && me.Username == owner {
		return nil, nil
	}
	path := field.NewPath("spec", "conversationRef", "name")
	if conv.Spec.FollowUps == exagentv1.FollowUpsApprovers {
		err := authz.ReviewAccess(ctx, w.Client, me, req.UserInfo.Extra, exagentv1.DeciderVerb(exagentv1.DecisionApprove), run.Namespace, conv.Spec.AgentRef.Name)
		if err == nil {
			return nil, nil
		}
		if !authz.IsDenied(err) {
			return nil, err
		}
		return field.Forbidden(path, fmt.Sprintf(
			"conversation %q was started by %s and takes follow-ups from them and from who may approve runs of agent %q: %v",
			conv.Name, owner, conv.Spec.AgentRef.Name, err)), nil
	}
	return field.Forbidden(path, fmt.Sprintf(
		"conversation %q was started by %s and takes follow-ups only from them (spec.followUps SameRequester): "+
			"continuing it reads its whole history; start a conversation of your own", conv.Name, owner)), nil
}

// turnsOf lists the turns of conv past the cache, by the label admission
// stamps (exact name checked).
func (w *AgentRunWebhook) turnsOf(ctx context.Context, conv *exagentv1.Conversation) ([]exagentv1.AgentRun, error) {
	var list exagentv1.AgentRunList
	if err := w.Reader.List(ctx, &list, client.InNamespace(conv.Namespace),
		client.MatchingLabels{exagentv1.LabelConversation: exagentv1.LabelValue(conv.Name)}); err != nil {
		return nil, fmt.Errorf("listing the turns of Conversation %s/%s: %w", conv.Namespace, conv.Name, err)
	}
	return slices.DeleteFunc(list.Items, func(r exagentv1.AgentRun) bool {
		return r.Spec.ConversationRef == nil || r.Spec.ConversationRef.Name != conv.Name
	}), nil
}

// firstTurn is the earliest of turns (creation time, then name).
func firstTurn(turns []exagentv1.AgentRun) *exagentv1.AgentRun {
	first := &turns[0]
	for i := range turns {
		t := &turns[i]
		if c := t.TurnCreated().Compare(first.TurnCreated()); c < 0 || c == 0 && t.Name < first.Name {
			first = t
		}
	}
	return first
}

// checkParticipant admits the participant a turn names: with
// conversationRef.participant, a listed participant — an Agent one whose
// Agent is spec.agentRef, or a human one (spec.agentRef then the
// conversation's: its question is asked under that Agent's name); without
// it, the conversation's agentRef or an Agent its participants list.
func checkParticipant(conv *exagentv1.Conversation, run *exagentv1.AgentRun) *field.Error {
	agent := run.Spec.AgentRef.Name
	if want := run.Spec.ConversationRef.Participant; want != "" {
		path := field.NewPath("spec", "conversationRef", "participant")
		i := slices.IndexFunc(conv.Spec.Participants, func(p exagentv1.Participant) bool { return p.Name == want })
		if i < 0 {
			names := make([]string, 0, len(conv.Spec.Participants))
			for _, p := range conv.Spec.Participants {
				names = append(names, p.Name)
			}
			return field.NotFound(path, fmt.Sprintf("%s: conversation %q lists the participants %v", want, conv.Name, names))
		}
		p := conv.Spec.Participants[i]
		switch {
		case p.AgentRef != nil && p.AgentRef.Name != agent:
			return field.Invalid(field.NewPath("spec", "agentRef", "name"), agent, fmt.Sprintf(
				"participant %s of conversation %q is Agent %s: set spec.agentRef to it (or leave it empty)", want, conv.Name, p.AgentRef.Name))
		case p.Human != nil && agent != conv.Spec.AgentRef.Name:
			return field.Invalid(field.NewPath("spec", "agentRef", "name"), agent, fmt.Sprintf(
				"participant %s of conversation %q is human: its turn runs under the conversation's agentRef %s (or leave spec.agentRef empty)",
				want, conv.Name, conv.Spec.AgentRef.Name))
		}
		return nil
	}
	if agent == conv.Spec.AgentRef.Name || slices.ContainsFunc(conv.Spec.Participants, func(p exagentv1.Participant) bool {
		return p.AgentRef != nil && p.AgentRef.Name == agent
	}) {
		return nil
	}
	return field.Invalid(field.NewPath("spec", "agentRef", "name"), agent, fmt.Sprintf(
		"not a participant of conversation %q: use its agentRef (%s) or an Agent its spec.participants lists",
		conv.Name, conv.Spec.AgentRef.Name))
}

// defaultParticipant fills spec.agentRef of a turn that names only its
// participant: the participant's Agent, or the conversation's agentRef
// for a human one.
func defaultParticipant(conv *exagentv1.Conversation, run *exagentv1.AgentRun) {
	ref := run.Spec.ConversationRef
	if ref == nil || ref.Participant == "" || run.Spec.AgentRef.Name != "" {
		return
	}
	// An unknown participant gets the conversation's agentRef too, so
	// validation says what is wrong with the participant, not the Agent.
	run.Spec.AgentRef.Name = conv.Spec.AgentRef.Name
	for _, p := range conv.Spec.Participants {
		if p.Name == ref.Participant && p.AgentRef != nil {
			run.Spec.AgentRef.Name = p.AgentRef.Name
		}
	}
}

// endedBy is the turn that ended the conversation ("" when none did).
func endedBy(turns []exagentv1.AgentRun) string {
	for i := range turns {
		if t := turns[i].Status.Turn; t != nil && t.EndedConversation != "" && turns[i].Status.Phase.IsTerminal() {
			return turns[i].Name
		}
	}
	return ""
}

// managerTurn reports whether run is a turn the manager itself creates (a
// RoundRobin conversation's next turn).
func (w *AgentRunWebhook) managerTurn(run *exagentv1.AgentRun, creator exagentv1.Actor) bool {
	return w.Manager != "" && creator.Username == w.Manager && run.Spec.ConversationRef != nil && run.Spec.Delegation == nil
}

// checkManagerTurn admits a turn the manager created only into a
// RoundRobin conversation, with the requester of its first turn.
func checkManagerTurn(conv *exagentv1.Conversation, turns []exagentv1.AgentRun, run *exagentv1.AgentRun) *field.Error {
	if conv.Spec.TurnPolicy != exagentv1.TurnRoundRobin {
		return field.Forbidden(field.NewPath("spec", "conversationRef", "name"), fmt.Sprintf(
			"the exagent manager creates turns only in RoundRobin conversations; %q is %s", conv.Name, conv.Spec.TurnPolicy))
	}
	if len(turns) == 0 {
		return field.Forbidden(field.NewPath("spec", "conversationRef", "name"),
			"a RoundRobin conversation's first turn is a person's: the manager continues it")
	}
	first := firstTurn(turns)
	if first.Spec.RequestedBy == nil || run.Spec.RequestedBy == nil || !authz.SameActor(*first.Spec.RequestedBy, *run.Spec.RequestedBy) {
		return field.Forbidden(field.NewPath("spec", "requestedBy"), fmt.Sprintf(
			"a RoundRobin turn carries the requester of the conversation's first turn %s", first.Name))
	}
	return nil
}

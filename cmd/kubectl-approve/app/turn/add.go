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
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// MaxText is the longest turn text: the AgentRun's spec.input bound.
const MaxText = 65536

// Request is one turn a person asks for.
type Request struct {
	Namespace    string
	Conversation string
	// Participant names the participant whose Agent takes the turn; ""
	// is the conversation's agentRef.
	Participant string
	Text        string
	// ConversationUID, when set, is the conversation the person looked
	// at (the page's form carries it): a conversation deleted and
	// re-created under the same name since is another conversation —
	// another history, other people — and nothing is created.
	ConversationUID types.UID
}

// ErrNotFound is a turn for a conversation that does not exist (the
// apiserver's NotFound, in the person's words).
var ErrNotFound = errors.New("not found")

// ErrConversationChanged refuses a turn for a conversation that is not
// the one the person looked at (Request.ConversationUID).
var ErrConversationChanged = errors.New("the conversation changed since you looked (deleted and created again under the same name): reload")

// Add reads the conversation, builds the turn (Build) and creates it with
// c — the person's own client, never anyone else's: admission stamps the
// creator as the turn's requester and refuses what the conversation does
// not take (followUps, doubleText Reject, maxTurns), and that refusal is
// returned as the apiserver's error. It returns the created turn and the
// conversation as read.
func Add(ctx context.Context, c client.Client, req Request) (*exagentv1.AgentRun, *exagentv1.Conversation, error) {
	if strings.TrimSpace(req.Text) == "" {
		return nil, nil, errors.New("the text is empty: say what the turn should do")
	}
	if len(req.Text) > MaxText {
		return nil, nil, fmt.Errorf("the text takes %d bytes, more than a turn's %d", len(req.Text), MaxText)
	}
	conv := &exagentv1.Conversation{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: req.Namespace, Name: req.Conversation}, conv); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, fmt.Errorf("conversation %q %w in namespace %q", req.Conversation, ErrNotFound, req.Namespace)
		}
		return nil, nil, fmt.Errorf("reading conversation %s: %w", req.Conversation, err)
	}
	if req.ConversationUID != "" && conv.UID != req.ConversationUID {
		return nil, conv, fmt.Errorf("%w (you looked at uid %s; %s is uid %s now)", ErrConversationChanged, req.ConversationUID, conv.Name, conv.UID)
	}
	run, err := Build(conv, req.Participant, req.Text)
	if err != nil {
		return nil, conv, err
	}
	if err := c.Create(ctx, run); err != nil {
		return nil, conv, fmt.Errorf("adding a turn to conversation %s: %w", conv.Name, err)
	}
	return run, conv, nil
}

// Build is the AgentRun that adds a turn with text to conv: named after
// the conversation (generateName), run by participant's Agent (conv's
// agentRef when participant is ""; a human participant's turn asks its
// people text as a question). Who asks is not written here: admission
// stamps it.
func Build(conv *exagentv1.Conversation, participant, text string) (*exagentv1.AgentRun, error) {
	agent, err := ParticipantAgent(conv, participant)
	if err != nil {
		return nil, err
	}
	return &exagentv1.AgentRun{
		ObjectMeta: metav1.ObjectMeta{Namespace: conv.Namespace, GenerateName: namePrefix(conv.Name)},
		Spec: exagentv1.AgentRunSpec{AgentRef: exagentv1.LocalObjectReference{Name: agent}, Input: text,
			ConversationRef: &exagentv1.ConversationRef{Name: conv.Name, Participant: participant}},
	}, nil
}

// ParticipantAgent is the Agent that takes a turn of conv: the named
// participant's, else conv's agentRef. A human participant's turn is a
// question to its people, asked under conv's agentRef.
func ParticipantAgent(conv *exagentv1.Conversation, participant string) (string, error) {
	if participant == "" {
		return conv.Spec.AgentRef.Name, nil
	}
	var names []string
	for _, p := range conv.Spec.Participants {
		if p.Name != participant {
			names = append(names, p.Name)
			continue
		}
		if p.AgentRef == nil {
			return conv.Spec.AgentRef.Name, nil
		}
		return p.AgentRef.Name, nil
	}
	return "", fmt.Errorf("conversation %s has no participant %q (it has: %s)", conv.Name, participant, strings.Join(names, ", "))
}

// Choice is a participant a person may give the next turn to.
type Choice struct {
	// Name is the participant's ("" is the conversation's agentRef).
	Name string
	// Agent takes the turn; for a human participant, People are whose
	// question it is (users and groups).
	Agent  string
	Human  bool
	People []string
}

// Choices are who may take a turn someone adds: the agentRef, then each
// participant in spec order.
func Choices(conv *exagentv1.Conversation) []Choice {
	out := []Choice{{Agent: conv.Spec.AgentRef.Name}}
	for _, p := range conv.Spec.Participants {
		c := Choice{Name: p.Name, Agent: conv.Spec.AgentRef.Name}
		switch {
		case p.AgentRef != nil:
			c.Agent = p.AgentRef.Name
		case p.Human != nil:
			c.Human = true
			c.People = append(append(c.People, p.Human.Users...), p.Human.Groups...)
		}
		out = append(out, c)
	}
	return out
}

// namePrefix is the generateName of a turn: the conversation's name,
// shortened so the generated name stays a valid object name.
func namePrefix(conv string) string {
	const max = 253 - 6 // the apiserver appends 5 random characters
	if len(conv) > max-1 {
		conv = conv[:max-1]
	}
	return strings.TrimRight(conv, "-.") + "-"
}

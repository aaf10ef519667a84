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

package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
)

// sayOptions adds a turn to a conversation: an AgentRun naming it, with
// the text as its input, run by the conversation's Agent or a participant.
type sayOptions struct {
	genericiooptions.IOStreams
	Participant string
	Wait        bool
	Timeout     time.Duration

	namespace    string
	conversation string
	text         string
	client       client.WithWatch
}

func newSayCommand(f *factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &sayOptions{IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "say CONVERSATION TEXT [--as-participant NAME] [--wait]",
		Short: "Add a turn to a conversation; --wait follows it like logs -f",
		Long: `Add a turn to a Conversation: an AgentRun naming it (spec.conversationRef)
whose input is TEXT, created as you (admission stamps you as its requester
and checks the conversation's followUps). It runs once every earlier turn
has ended, and continues the conversation's transcript: the model sees
every earlier turn.

By default the conversation's agentRef takes the turn; --as-participant
names another participant Agent of the conversation.

With --wait the command follows the turn like logs -f, until it ends or
waits for a human.`,
		Example: `  kubectl approve say support-42 "also check the staging cluster"
  kubectl approve say support-42 "deploy it" --as-participant deployer --wait`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runOptions(cmd.Context(), o, f, cmd, args)
		},
	}
	cmd.Flags().StringVar(&o.Participant, "as-participant", "", "The participant (its name in spec.participants) that takes the turn.")
	cmd.Flags().BoolVar(&o.Wait, "wait", false, "Follow the turn until it ends or waits for a human.")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 0, "With --wait, stop following after this long (0: no limit).")
	return cmd
}

// Complete resolves the namespace and the client.
func (o *sayOptions) Complete(f *factory, _ *cobra.Command, args []string) error {
	var err error
	if o.namespace, err = f.Namespace(); err != nil {
		return err
	}
	o.conversation, o.text = args[0], args[1]
	o.client, err = f.WatchClient()
	return err
}

// Validate refuses an empty text and a negative timeout.
func (o *sayOptions) Validate() error {
	if strings.TrimSpace(o.text) == "" {
		return fmt.Errorf("TEXT is empty: say what the turn should do")
	}
	if o.Timeout < 0 {
		return fmt.Errorf("--timeout must not be negative")
	}
	return nil
}

// Run creates the turn and, with --wait, follows it.
func (o *sayOptions) Run(ctx context.Context) error {
	conv := &exagentv1.Conversation{}
	if err := o.client.Get(ctx, types.NamespacedName{Namespace: o.namespace, Name: o.conversation}, conv); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("conversation %q not found in namespace %q", o.conversation, o.namespace)
		}
		return fmt.Errorf("reading conversation %s: %w", o.conversation, err)
	}
	agent, err := participantAgent(conv, o.Participant)
	if err != nil {
		return err
	}
	turn := &exagentv1.AgentRun{
		ObjectMeta: metav1.ObjectMeta{Namespace: o.namespace, GenerateName: turnNamePrefix(conv.Name)},
		Spec: exagentv1.AgentRunSpec{AgentRef: exagentv1.LocalObjectReference{Name: agent}, Input: o.text,
			ConversationRef: &exagentv1.ConversationRef{Name: conv.Name}},
	}
	if err := o.client.Create(ctx, turn); err != nil {
		return fmt.Errorf("adding a turn to conversation %s: %w", conv.Name, err)
	}
	where := "it runs once every earlier turn has ended"
	if conv.Status.Open != "" {
		where = fmt.Sprintf("it runs after turn %s", conv.Status.Open)
	}
	fmt.Fprintf(o.Out, "agentrun/%s: turn of conversation %s by agent %s (%s)\n", turn.Name, conv.Name, agent, where)
	if !o.Wait {
		return nil
	}
	logs := &logsOptions{IOStreams: o.IOStreams, Follow: true, Timeout: o.Timeout, namespace: o.namespace, run: turn.Name, client: o.client}
	return logs.Run(ctx)
}

// participantAgent is the Agent that takes a turn of conv: the named
// participant's, else conv's agentRef.
func participantAgent(conv *exagentv1.Conversation, participant string) (string, error) {
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
			return "", fmt.Errorf("participant %q of conversation %s is a person: their turn is a question, answered with kubectl approve answer", participant, conv.Name)
		}
		return p.AgentRef.Name, nil
	}
	return "", fmt.Errorf("conversation %s has no participant %q (it has: %s)", conv.Name, participant, strings.Join(names, ", "))
}

// turnNamePrefix is the generateName of a turn: the conversation's name,
// shortened so the generated name stays a valid object name.
func turnNamePrefix(conv string) string {
	const max = 253 - 6 // the apiserver appends 5 random characters
	if len(conv) > max-1 {
		conv = conv[:max-1]
	}
	return strings.TrimRight(conv, "-.") + "-"
}

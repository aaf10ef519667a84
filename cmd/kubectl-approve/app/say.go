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
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/exagent-io/exagent/cmd/kubectl-approve/app/turn"
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
names another participant of the conversation: an Agent, or people —
their turn is TEXT as a question to them, answered with kubectl approve
answer (or on the page's thread).

With --wait the command follows the turn as logs -f CONVERSATION prints
it — the turn's own messages, calls, approvals and end, never the earlier
turns' — until it ends or waits for a human (a turn queued behind another
says which, and is followed until it has run).`,
		Example: `  kubectl approve say support-42 "also check the staging cluster"
  kubectl approve say support-42 "deploy it" --as-participant deployer --wait`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runOptions(cmd.Context(), o, f, cmd, args)
		},
	}
	cmd.Flags().StringVar(&o.Participant, "as-participant", "", "The participant (its name in spec.participants) that takes the turn: an Agent, or people (the turn is a question to them).")
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

// Run creates the turn (turn.Add: the same turn the approver's page
// adds) and, with --wait, follows it.
func (o *sayOptions) Run(ctx context.Context) error {
	run, conv, err := turn.Add(ctx, o.client, turn.Request{Namespace: o.namespace, Conversation: o.conversation,
		Participant: o.Participant, Text: o.text})
	if err != nil {
		return err
	}
	where := "it runs once every earlier turn has ended"
	if conv.Status.Open != "" {
		where = fmt.Sprintf("it runs after turn %s", conv.Status.Open)
	}
	by := "agent " + run.Spec.AgentRef.Name
	for _, c := range turn.Choices(conv) {
		if c.Human && c.Name == o.Participant {
			by = fmt.Sprintf("participant %s (a question to %s)", c.Name, strings.Join(c.People, ", "))
		}
	}
	fmt.Fprintf(o.Out, "agentrun/%s: turn of conversation %s by %s (%s)\n", run.Name, conv.Name, by, where)
	if !o.Wait {
		return nil
	}
	return followTurn(ctx, o.client, o.Out, run, o.Timeout)
}

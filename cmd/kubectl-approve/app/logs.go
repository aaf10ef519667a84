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
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// logsOptions prints a run's transcript and journal, and with --follow
// goes on printing them as they grow.
type logsOptions struct {
	genericiooptions.IOStreams
	Follow  bool
	Timeout time.Duration

	namespace string
	run       string
	client    client.WithWatch
}

func newLogsCommand(f *factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &logsOptions{IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "logs RUN|CONVERSATION [-f]",
		Short: "Print a run's transcript and journal (a conversation's, turn by turn); -f follows a run until it ends or waits for a human, a conversation until interrupted",
		Long: `Print what a run did, in order: the model's messages, each tool call with
its arguments, the approvals it asked for, the decisions (who, why), each
call's outcome, and how the run ended.

With -f the command watches the run and prints each new line as the
operator commits it, until the run ends or waits for a human; then it says
what the run waits for and the command that moves it on, and exits 0.

Given a Conversation's name (and no run of that name), it prints the
conversation turn by turn: each turn's run, Agent, who asked and how it
stands, then what that turn said and did. With -f it goes on printing
the turns as they come — each new turn, its messages as they are
journaled, what a turn waits for — until interrupted (or --timeout).`,
		Example: `  kubectl approve logs triage-42
  kubectl approve logs -f triage-42 && kubectl approve show triage-42
  kubectl approve logs -f support-42`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeRuns(f, anyRun),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runOptions(cmd.Context(), o, f, cmd, args)
		},
	}
	cmd.Flags().BoolVarP(&o.Follow, "follow", "f", false, "Follow the run until it ends or waits for a human; a conversation, until interrupted.")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 0, "With -f, stop following after this long (0: no limit).")
	return cmd
}

// Complete resolves the namespace and the client.
func (o *logsOptions) Complete(f *factory, _ *cobra.Command, args []string) error {
	var err error
	if o.namespace, err = f.Namespace(); err != nil {
		return err
	}
	o.run = args[0]
	o.client, err = f.WatchClient()
	return err
}

// Validate has nothing to check beyond cobra's arguments.
func (o *logsOptions) Validate() error {
	if o.Timeout < 0 {
		return fmt.Errorf("--timeout must not be negative")
	}
	return nil
}

// Run prints the entries, following the run's watch with -f; a
// Conversation's name (no run of that name) prints it turn by turn, and
// with -f goes on with its turns as they come (logs_follow.go).
func (o *logsOptions) Run(ctx context.Context) error {
	run, err := getRun(ctx, o.client, o.namespace, o.run)
	if err != nil {
		if ok, cerr := o.conversationLogs(ctx); ok {
			return cerr
		}
		return err
	}
	printed := map[string]bool{}
	segments := newSegmentReader(o.client)
	emit := func(r *exagentv1.AgentRun) error {
		j, err := readJournal(ctx, segments, r)
		if err != nil {
			return err
		}
		for _, e := range logEntries(r, j) {
			if printed[e.key] {
				continue
			}
			printed[e.key] = true
			if _, err := fmt.Fprintln(o.Out, e.text); err != nil {
				return err
			}
		}
		return nil
	}
	if !o.Follow {
		return emit(run)
	}
	if err := errNotServed(run); err != nil {
		return err // -f would follow a run nothing will ever write
	}
	err = watchRun(ctx, o.client, o.namespace, o.run, o.Timeout, func(r *exagentv1.AgentRun) (bool, error) {
		run = r
		if err := emit(r); err != nil {
			return false, err
		}
		if w := waitingFor(r); w != "" {
			_, err := fmt.Fprintln(o.Out, w)
			return true, err
		}
		return r.Status.Phase.IsTerminal(), nil
	})
	return followEnded(ctx, err, "run", o.run, o.Timeout, run)
}

// readJournal reads run's whole journal through its chain; nil when
// nothing is sealed (logEntries then reads the status alone).
func readJournal(ctx context.Context, r *segmentReader, run *exagentv1.AgentRun) (*journal, error) {
	if !sealed(run) {
		return nil, nil
	}
	chain, err := r.chain(ctx, run)
	if err != nil {
		return nil, err
	}
	return journalOf(run, chain)
}

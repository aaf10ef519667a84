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
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// Main runs the plugin with args (without the program name) and returns the
// process exit code. Errors are printed the way kubectl prints them.
func Main(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	cmd := NewCommand(streams)
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(ctx); err != nil {
		PrintError(streams.ErrOut, err)
		return 1
	}
	return 0
}

// NewCommand returns the root command. The root is itself the approve verb
// (`kubectl approve RUN [APPROVAL]`, approve.go); the other verbs are its
// subcommands, one file each.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	f := newFactory()
	cmd := newApproveCommand(f, streams)
	cmd.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl approve"}
	cmd.SilenceErrors = true
	cmd.SilenceUsage = true
	f.AddFlags(cmd.PersistentFlags())
	registerNamespaceCompletion(cmd, f)
	cmd.AddCommand(
		newListCommand(f, streams),
		newBudgetsCommand(f, streams),
		newShowCommand(f, streams),
		newDenyCommand(f, streams),
		newCancelCommand(f, streams),
		newResolveCommand(f, streams),
		newAnswerCommand(f, streams),
		newWaitCommand(f, streams),
		newLogsCommand(f, streams),
		newSayCommand(f, streams),
		newScheduleCommand(f, streams),
		newVersionCommand(f, streams),
		newUICommand(f, streams),
	)
	return cmd
}

// options is what every verb implements, kubectl style.
type options interface {
	Complete(f *factory, cmd *cobra.Command, args []string) error
	Validate() error
	Run(ctx context.Context) error
}

func runOptions(ctx context.Context, o options, f *factory, cmd *cobra.Command, args []string) error {
	if err := o.Complete(f, cmd, args); err != nil {
		return err
	}
	if err := o.Validate(); err != nil {
		return err
	}
	return o.Run(ctx)
}

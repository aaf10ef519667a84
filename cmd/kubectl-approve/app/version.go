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
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/exagent-io/exagent/internal/version"
)

// versionOptions prints the plugin's own build (internal/version): no
// cluster is asked, so it works without a kubeconfig.
type versionOptions struct {
	genericiooptions.IOStreams
	Output string

	info version.Info
}

func newVersionCommand(f *factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &versionOptions{IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "version [-o json|yaml]",
		Short: "Print the plugin's version, commit and Go version",
		Long: `Print the version of this kubectl-approve binary: the exagent release it
belongs to, the commit it was built from, the Go toolchain and the platform.
The manager logs the same at start and exports it as exagent_build_info.`,
		Example: `  kubectl approve version
  kubectl approve version -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runOptions(cmd.Context(), o, f, cmd, args)
		},
	}
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "Output format: json or yaml (default: one line).")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"json", "yaml"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// Complete reads the build information.
func (o *versionOptions) Complete(*factory, *cobra.Command, []string) error {
	o.info = version.Get()
	return nil
}

// Validate checks -o.
func (o *versionOptions) Validate() error {
	switch o.Output {
	case "", "json", "yaml":
		return nil
	}
	return fmt.Errorf("invalid --output %q: must be json or yaml", o.Output)
}

// Run prints the build.
func (o *versionOptions) Run(context.Context) error {
	var err error
	switch o.Output {
	case "json":
		var b []byte
		if b, err = json.MarshalIndent(o.info, "", "  "); err == nil {
			_, err = fmt.Fprintf(o.Out, "%s\n", b)
		}
	case "yaml":
		var b []byte
		if b, err = yaml.Marshal(o.info); err == nil {
			_, err = o.Out.Write(b)
		}
	default:
		_, err = fmt.Fprintln(o.Out, "kubectl-approve", o.info.String())
	}
	return err
}

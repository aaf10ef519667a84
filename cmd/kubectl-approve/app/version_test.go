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
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/exagent-io/exagent/internal/version"
)

// TestVersion: `kubectl approve version` prints the build internal/version
// reports, as a line, JSON or YAML, with no cluster to ask.
func TestVersion(t *testing.T) {
	want := version.Get()
	run := func(t *testing.T, args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		cmd := NewCommand(genericiooptions.IOStreams{Out: &out, ErrOut: &errOut})
		cmd.SetArgs(append([]string{"version", "--kubeconfig", t.TempDir() + "/none"}, args...))
		if err := cmd.Execute(); err != nil {
			t.Fatalf("version %v: %v (%s)", args, err, errOut.String())
		}
		return out.String()
	}
	t.Run("line", func(t *testing.T) {
		if got := run(t); got != "kubectl-approve "+want.String()+"\n" {
			t.Errorf("got %q", got)
		}
	})
	for format, unmarshal := range map[string]func([]byte, any) error{"json": json.Unmarshal, "yaml": func(b []byte, v any) error { return yaml.Unmarshal(b, v) }} {
		t.Run(format, func(t *testing.T) {
			var got version.Info
			out := run(t, "-o", format)
			if err := unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("%s: %v", out, err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			for _, key := range []string{"version", "commit", "goVersion", "platform"} {
				if !strings.Contains(out, key) {
					t.Errorf("%s output lacks %q:\n%s", format, key, out)
				}
			}
		})
	}
	t.Run("unknown format", func(t *testing.T) {
		cmd := NewCommand(genericiooptions.NewTestIOStreamsDiscard())
		cmd.SetArgs([]string{"version", "-o", "wide"})
		if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "json or yaml") {
			t.Errorf("err = %v", err)
		}
	})
}

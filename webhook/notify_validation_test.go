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
	"strings"
	"testing"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

func TestValidateNotify(t *testing.T) {
	ok := exagentv1.NotifySink{Name: "oncall", URL: "https://hooks.example/exagent", Format: exagentv1.NotifySlack,
		Events:           []exagentv1.NotifyEvent{exagentv1.NotifyApprovalRequested},
		SigningSecretRef: &exagentv1.SecretKeySelector{Name: "hook", Key: "secret"}}
	tests := map[string]struct {
		sinks []exagentv1.NotifySink
		want  string // a substring of the error list; "" for none
	}{
		"valid":                {sinks: []exagentv1.NotifySink{ok}},
		"plain http loopback":  {sinks: []exagentv1.NotifySink{{Name: "local", URL: "http://127.0.0.1:8080/hook"}}},
		"not http":             {sinks: []exagentv1.NotifySink{{Name: "x", URL: "ftp://hooks.example/"}}, want: `spec.notify[0].url: Invalid value: "ftp://hooks.example/": must be an http or https URL`},
		"credentials in url":   {sinks: []exagentv1.NotifySink{{Name: "x", URL: "https://u:p@hooks.example/"}}, want: "must not carry credentials"},
		"no host":              {sinks: []exagentv1.NotifySink{{Name: "x", URL: "https:///path"}}, want: "must name a host"},
		"duplicate names":      {sinks: []exagentv1.NotifySink{ok, ok}, want: `spec.notify[1].name: Duplicate value: "oncall"`},
		"bad name":             {sinks: []exagentv1.NotifySink{{Name: "On Call", URL: "https://h/"}}, want: "spec.notify[0].name: Invalid value"},
		"unknown event":        {sinks: []exagentv1.NotifySink{{Name: "x", URL: "https://h/", Events: []exagentv1.NotifyEvent{"Paused"}}}, want: `spec.notify[0].events[0]: Unsupported value: "Paused"`},
		"unknown format":       {sinks: []exagentv1.NotifySink{{Name: "x", URL: "https://h/", Format: "Teams"}}, want: `spec.notify[0].format: Unsupported value: "Teams"`},
		"secret without a key": {sinks: []exagentv1.NotifySink{{Name: "x", URL: "https://h/", SigningSecretRef: &exagentv1.SecretKeySelector{Name: "hook"}}}, want: "spec.notify[0].signingSecretRef.key: Required value"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			a := &exagentv1.Agent{Spec: exagentv1.AgentSpec{Model: exagentv1.ModelSpec{Provider: exagentv1.ModelProviderScripted,
				Script: []exagentv1.ScriptTurn{{Text: "hi"}}}, Notify: tc.sinks}}
			got := ValidateAgent(a, nil).ToAggregate()
			switch {
			case tc.want == "" && got != nil:
				t.Errorf("want no error, got %v", got)
			case tc.want != "" && (got == nil || !strings.Contains(got.Error(), tc.want)):
				t.Errorf("errors %v, want one with %q", got, tc.want)
			}
		})
	}
}

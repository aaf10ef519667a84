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

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
)

func TestValidateRetention(t *testing.T) {
	sink := func(mut ...func(*exagentv1.NotifySink)) *exagentv1.NotifySink {
		s := &exagentv1.NotifySink{Name: "audit", URL: "https://archive.example/runs", SigningSecretRef: &exagentv1.SecretKeySelector{Name: "k", Key: "key"}}
		for _, m := range mut {
			m(s)
		}
		return s
	}
	tests := map[string]struct {
		r    exagentv1.RetentionSpec
		want string // a substring of the error list; "" for none
	}{
		"none":                    {},
		"all of it":               {r: exagentv1.RetentionSpec{TTLSecondsAfterFinished: new(int32(3600)), KeepLast: new(int32(10)), Archive: sink()}},
		"TTL 0 and keepLast 0":    {r: exagentv1.RetentionSpec{TTLSecondsAfterFinished: new(int32(0)), KeepLast: new(int32(0))}},
		"keepLast at its bound":   {r: exagentv1.RetentionSpec{KeepLast: new(int32(exagentv1.MaxKeepLast))}},
		"CloudEvents said":        {r: exagentv1.RetentionSpec{Archive: sink(func(s *exagentv1.NotifySink) { s.Format = exagentv1.NotifyCloudEvents })}},
		"negative TTL":            {r: exagentv1.RetentionSpec{TTLSecondsAfterFinished: new(int32(-5))}, want: "spec.retention.ttlSecondsAfterFinished: Invalid value: -5"},
		"negative keepLast":       {r: exagentv1.RetentionSpec{KeepLast: new(int32(-1))}, want: "spec.retention.keepLast: Invalid value: -1"},
		"keepLast past its bound": {r: exagentv1.RetentionSpec{KeepLast: new(int32(exagentv1.MaxKeepLast + 1))}, want: "0 to 10000"},
		"a Slack archive": {r: exagentv1.RetentionSpec{Archive: sink(func(s *exagentv1.NotifySink) { s.Format = exagentv1.NotifySlack })},
			want: `spec.retention.archive.format: Unsupported value: "Slack"`},
		"archive events": {r: exagentv1.RetentionSpec{Archive: sink(func(s *exagentv1.NotifySink) { s.Events = []exagentv1.NotifyEvent{exagentv1.NotifyRunEnded} })},
			want: "spec.retention.archive.events: Forbidden: the archive is one event, io.exagent.run.archived"},
		"archive without a name": {r: exagentv1.RetentionSpec{Archive: sink(func(s *exagentv1.NotifySink) { s.Name = "" })}, want: "spec.retention.archive.name: Required value"},
		"archive url credentials": {r: exagentv1.RetentionSpec{Archive: sink(func(s *exagentv1.NotifySink) { s.URL = "https://u:p@archive.example/" })},
			want: "must not carry credentials"},
		"archive signing key without its key": {r: exagentv1.RetentionSpec{Archive: sink(func(s *exagentv1.NotifySink) { s.SigningSecretRef.Key = "" })},
			want: "spec.retention.archive.signingSecretRef.key: Required value"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			a := &exagentv1.Agent{Spec: exagentv1.AgentSpec{Model: exagentv1.ModelSpec{Provider: exagentv1.ModelProviderScripted,
				Script: []exagentv1.ScriptTurn{{Text: "hi"}}}, Retention: tc.r}}
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

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

// TestValidateAgentRunGitOpsTTL: a run Argo CD or Flux applies (its
// tracking label or annotation) is refused a TTL — the next sync would
// re-create it under a new UID and every tool call would run again —
// with a message naming the tool, the mark and the fix; without a TTL, or
// without a mark, it is admitted. An update that makes a run with a TTL
// GitOps-managed (adoption) is refused too; a run admitted before the
// rule is not stopped from changing its metadata.
func TestValidateAgentRunGitOpsTTL(t *testing.T) {
	run := func(ttl *int32, labels, annotations map[string]string) *exagentv1.AgentRun {
		r := &exagentv1.AgentRun{Spec: exagentv1.AgentRunSpec{AgentRef: exagentv1.LocalObjectReference{Name: "pay"}, Input: "pay", TTLSecondsAfterFinished: ttl}}
		r.Labels, r.Annotations = labels, annotations
		return r
	}
	argoAnn := map[string]string{"argocd.argoproj.io/tracking-id": "runs:exagent.io/AgentRun:team/r"}
	tests := map[string]struct {
		run, old *exagentv1.AgentRun
		want     string
	}{
		"argo annotation and a TTL": {run: run(new(int32(60)), nil, argoAnn),
			want: "spec.ttlSecondsAfterFinished: Forbidden: Argo CD manages this run (annotation argocd.argoproj.io/tracking-id)"},
		"argo label and TTL 0": {run: run(new(int32(0)), map[string]string{"app.kubernetes.io/instance": "runs"}, nil),
			want: "Argo CD manages this run (label app.kubernetes.io/instance, Argo CD's label tracking; if no GitOps tool syncs this run (Helm alone set the label), remove the label)"},
		"flux kustomization": {run: run(new(int32(60)), map[string]string{"kustomize.toolkit.fluxcd.io/name": "runs", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}, nil),
			want: "Flux manages this run"},
		"flux helm":               {run: run(new(int32(60)), map[string]string{"helm.toolkit.fluxcd.io/name": "runs"}, nil), want: "removing it from the source"},
		"GitOps without a TTL":    {run: run(nil, nil, argoAnn)},
		"a TTL without GitOps":    {run: run(new(int32(60)), map[string]string{"team": "a"}, nil)},
		"adopted by Argo CD":      {run: run(new(int32(60)), nil, argoAnn), old: run(new(int32(60)), nil, nil), want: "Argo CD manages this run"},
		"managed before the rule": {run: run(new(int32(60)), map[string]string{"x": "y"}, argoAnn), old: run(new(int32(60)), nil, argoAnn)},
		"adopted, without a TTL":  {run: run(nil, nil, argoAnn), old: run(nil, nil, nil)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := ValidateAgentRun(tc.run, tc.old).ToAggregate()
			switch {
			case tc.want == "" && got != nil:
				t.Errorf("want no error, got %v", got)
			case tc.want != "" && (got == nil || !strings.Contains(got.Error(), tc.want)):
				t.Errorf("errors %v, want one with %q", got, tc.want)
			}
		})
	}
}

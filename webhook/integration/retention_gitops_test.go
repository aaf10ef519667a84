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

package integration_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// TestGitOpsRunTTLAdmission: through the real apiserver and webhook, a
// run Argo CD or Flux applies (its tracking annotation or label) is
// refused spec.ttlSecondsAfterFinished — the next sync would re-create
// the deleted run and repeat its tool calls; the same run without the
// TTL, or without the mark, is admitted.
func TestGitOpsRunTTLAdmission(t *testing.T) {
	s := newScenario(t)
	dave := as(t, "dave")
	run := func(name string, ttl *int32, labels, annotations map[string]string) *exagentv1.AgentRun {
		return &exagentv1.AgentRun{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns, Labels: labels, Annotations: annotations},
			Spec:       exagentv1.AgentRunSpec{AgentRef: exagentv1.LocalObjectReference{Name: "payments"}, Input: "pay", TTLSecondsAfterFinished: ttl},
		}
	}
	argo := map[string]string{"argocd.argoproj.io/tracking-id": "runs:exagent.io/AgentRun:" + s.ns + "/r"}
	flux := map[string]string{"kustomize.toolkit.fluxcd.io/name": "runs", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}

	for name, tc := range map[string]struct {
		run  *exagentv1.AgentRun
		want string
	}{
		"Argo CD and a TTL": {run: run("argo-ttl", ptr.To[int32](3600), nil, argo),
			want: "spec.ttlSecondsAfterFinished: Forbidden: Argo CD manages this run (annotation argocd.argoproj.io/tracking-id)"},
		"Flux and TTL 0":        {run: run("flux-ttl", ptr.To[int32](0), flux, nil), want: "Flux manages this run"},
		"Argo CD without a TTL": {run: run("argo-plain", nil, nil, argo)},
		"a TTL without GitOps":  {run: run("ttl-plain", ptr.To[int32](3600), map[string]string{"team": "payments"}, nil)},
	} {
		t.Run(name, func(t *testing.T) {
			err := dave.Create(t.Context(), tc.run)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "removing it from the source") {
				t.Fatalf("got %v, want refused with %q and the fix", err, tc.want)
			}
			assertAbsent(t, tc.run)
		})
	}

}

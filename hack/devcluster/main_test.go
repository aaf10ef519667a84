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

package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseUser(t *testing.T) {
	tests := map[string]struct {
		in      string
		want    user
		wantErr bool
	}{
		"name only":        {in: "alice", want: user{Name: "alice"}},
		"groups":           {in: "carol:resolvers, sre", want: user{Name: "carol", Groups: []string{"resolvers", "sre"}}},
		"empty groups":     {in: "bob:", want: user{Name: "bob"}},
		"empty name":       {in: ":ops", wantErr: true},
		"path in name":     {in: "../x", wantErr: true},
		"the admin's file": {in: "kubeconfig", wantErr: true},
		"the manager's":    {in: "manager", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := parseUser(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestReadWebhooks: every webhook of the generated manifests is pointed at
// the manager on the host, with the generated path and no Service.
func TestReadWebhooks(t *testing.T) {
	file := filepath.Join(t.TempDir(), "manifests.yaml")
	if err := os.WriteFile(file, []byte(`---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: mutating-webhook-configuration
webhooks:
- name: m.exagent.io
  admissionReviewVersions: [v1]
  sideEffects: None
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /mutate-x}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: validating-webhook-configuration
webhooks:
- name: v1.exagent.io
  admissionReviewVersions: [v1]
  sideEffects: None
  clientConfig:
    service: {name: webhook-service, namespace: system, path: validate-a}
- name: v2.exagent.io
  admissionReviewVersions: [v1]
  sideEffects: None
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /validate-b}
---
apiVersion: v1
kind: Service
metadata:
  name: ignored
`), 0o644); err != nil {
		t.Fatal(err)
	}
	mut, val, err := readWebhooks(file, "127.0.0.1", 9443)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range mut {
		for _, w := range c.Webhooks {
			if w.ClientConfig.Service != nil || w.ClientConfig.URL == nil {
				t.Fatalf("%s: clientConfig %+v", w.Name, w.ClientConfig)
			}
			got = append(got, c.Name+" "+w.Name+" "+*w.ClientConfig.URL)
		}
	}
	for _, c := range val {
		for _, w := range c.Webhooks {
			if w.ClientConfig.Service != nil || w.ClientConfig.URL == nil {
				t.Fatalf("%s: clientConfig %+v", w.Name, w.ClientConfig)
			}
			got = append(got, c.Name+" "+w.Name+" "+*w.ClientConfig.URL)
		}
	}
	want := []string{
		"mutating-webhook-configuration m.exagent.io https://127.0.0.1:9443/mutate-x",
		"validating-webhook-configuration v1.exagent.io https://127.0.0.1:9443/validate-a",
		"validating-webhook-configuration v2.exagent.io https://127.0.0.1:9443/validate-b",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestInstalledFromTheRepository: the files devcluster installs exist and
// parse: the generated webhook manifests and the shipped ClusterRoles.
func TestInstalledFromTheRepository(t *testing.T) {
	root, err := findRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	mut, val, err := readWebhooks(filepath.Join(root, "config", "webhook", "manifests.yaml"), "127.0.0.1", 9443)
	if err != nil || len(mut) == 0 || len(val) == 0 {
		t.Fatalf("webhook manifests: %d mutating, %d validating, %v", len(mut), len(val), err)
	}
	// The segment webhook (only the manager creates AgentRunSegments) is
	// installed with the rest.
	segments := false
	for _, c := range val {
		for _, w := range c.Webhooks {
			segments = segments || (w.Name == "vagentrunsegment.exagent.io" && w.ClientConfig.URL != nil &&
				*w.ClientConfig.URL == "https://127.0.0.1:9443/validate-exagent-io-v1alpha1-agentrunsegment")
		}
	}
	if !segments {
		t.Error("the generated manifests have no vagentrunsegment.exagent.io webhook pointed at the manager")
	}
	names := map[string]bool{}
	files, _ := filepath.Glob(filepath.Join(root, "config", "rbac", "*.yaml"))
	for _, f := range files {
		roles, err := readClusterRoles(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range roles {
			names[r.Name] = true
		}
	}
	for _, want := range []string{"exagent-viewer", "exagent-editor", "exagent-approver", "exagent-resolver", "exagent-manager"} {
		if !names[want] {
			t.Errorf("config/rbac has no ClusterRole %s", want)
		}
	}
}

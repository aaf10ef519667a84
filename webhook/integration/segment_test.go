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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/segment"
)

// segmentOf is the segment the manager would create for run: index 0,
// named by its content hash, labelled and owned as store.Segments
// does.
func segmentOf(t *testing.T, run *exagentv1.AgentRun, content string) *exagentv1.AgentRunSegment {
	t.Helper()
	spec := exagentv1.AgentRunSegmentSpec{
		RunName: run.Name, RunUID: string(run.UID), Index: 0,
		Messages: []exagentv1.Message{{Role: exagentv1.RoleUser, Content: content}},
		Bytes:    int64(len(content)),
	}
	name, _, err := segment.Name(&spec)
	if err != nil {
		t.Fatal(err)
	}
	return &exagentv1.AgentRunSegment{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: run.Namespace, Name: name,
			Labels: map[string]string{exagentv1.LabelRun: run.Name, exagentv1.LabelRunUID: string(run.UID)},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: exagentv1.GroupVersion.String(), Kind: "AgentRun",
				Name: run.Name, UID: run.UID, Controller: ptr.To(true),
			}},
		},
		Spec: spec,
	}
}

const managerOnly = "AgentRunSegments are written only by the exagent manager"

// TestSegmentAdmission: segments are created by the manager's identity
// alone. A namespace's cluster-admin holds the create verb and is refused
// by the webhook, with the message; editors and viewers lack the verb
// (RBAC); the manager's own segments must be named by their content and
// labelled and owned by their run. Viewers and editors read segments;
// an admin may delete one.
func TestSegmentAdmission(t *testing.T) {
	s := newScenario(t)
	run := get(t, s.ns, runPayments, &exagentv1.AgentRun{})
	bind(t, s.ns, "olivia", "ClusterRole", "cluster-admin")
	bind(t, s.ns, "victor", "ClusterRole", "exagent-viewer")

	t.Run("refused for everyone but the manager", func(t *testing.T) {
		cases := map[string]struct {
			c       client.Client
			wantMsg string
		}{
			"a namespace admin (RBAC allows create)":  {c: as(t, "olivia"), wantMsg: managerOnly + `, as it commits a run's transcript: user "olivia" may read them`},
			"an editor (RBAC)":                        {c: as(t, "dave"), wantMsg: `cannot create resource "agentrunsegments"`},
			"a viewer (RBAC)":                         {c: as(t, "victor"), wantMsg: `cannot create resource "agentrunsegments"`},
			"a ServiceAccount bound to cluster-admin": {c: serviceAccountClient(t, s.ns, "robot", "cluster-admin"), wantMsg: managerOnly},
		}
		for name, tc := range cases {
			t.Run(name, func(t *testing.T) {
				seg := segmentOf(t, run, "planted by "+name)
				err := tc.c.Create(t.Context(), seg)
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tc.wantMsg) {
					t.Fatalf("got %v, want Forbidden with %q", err, tc.wantMsg)
				}
				assertAbsent(t, seg)
			})
		}
	})

	// The suite's manager serves the webhooks with the admin's credentials
	// (authz.Self), so the admin client is the manager's identity.
	manager := admin
	valid := segmentOf(t, run, "hello")
	t.Run("the manager's valid segment is admitted", func(t *testing.T) {
		if err := manager.Create(t.Context(), valid); err != nil {
			t.Fatalf("the manager creating a segment named by its content: %v", err)
		}
	})

	t.Run("the manager's malformed segments are refused", func(t *testing.T) {
		cases := map[string]struct {
			mut     func(*exagentv1.AgentRunSegment)
			wantMsg string
		}{
			"forged name": {mut: func(s *exagentv1.AgentRunSegment) { s.Name = strings.Repeat("0", 64) },
				wantMsg: "metadata.name: Invalid value: \"" + strings.Repeat("0", 64) + "\": must be the sha256 of the segment's content"},
			"another run's uid label": {mut: func(s *exagentv1.AgentRunSegment) { s.Labels[exagentv1.LabelRunUID] = "other" },
				wantMsg: "metadata.labels[exagent.io/run-uid]: Invalid value: \"other\": must be spec.runUID"},
			"owned by another object": {mut: func(s *exagentv1.AgentRunSegment) { s.OwnerReferences[0].UID = "other" },
				wantMsg: "metadata.ownerReferences[0].uid: Invalid value: \"other\": must be spec.runUID"},
			"no controlling owner": {mut: func(s *exagentv1.AgentRunSegment) { s.OwnerReferences = nil },
				wantMsg: "metadata.ownerReferences: Required value"},
		}
		for name, tc := range cases {
			t.Run(name, func(t *testing.T) {
				seg := segmentOf(t, run, "malformed: "+name)
				tc.mut(seg)
				err := manager.Create(t.Context(), seg)
				if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.wantMsg) {
					t.Fatalf("got %v, want Invalid with %q", err, tc.wantMsg)
				}
				assertAbsent(t, seg)
			})
		}
	})

	t.Run("viewers and editors read segments", func(t *testing.T) {
		for _, user := range []string{"victor", "dave"} {
			c := as(t, user)
			got := &exagentv1.AgentRunSegment{}
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(valid), got); err != nil || got.Spec.Messages[0].Content != "hello" {
				t.Errorf("%s get: %v", user, err)
			}
			list := &exagentv1.AgentRunSegmentList{}
			if err := c.List(t.Context(), list, client.InNamespace(s.ns),
				client.MatchingLabels{exagentv1.LabelRunUID: string(run.UID)}); err != nil || len(list.Items) != 1 {
				t.Errorf("%s list: %v (%d items), want the one segment", user, err, len(list.Items))
			}
		}
	})

	t.Run("nobody edits a segment; an admin may delete it", func(t *testing.T) {
		edited := get(t, s.ns, valid.Name, &exagentv1.AgentRunSegment{})
		edited.Spec.Messages[0].Content = "edited"
		if err := manager.Update(t.Context(), edited); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "a segment is immutable") {
			t.Errorf("editing a segment: got %v, want refused by the CRD's rule", err)
		}
		if err := as(t, "victor").Delete(t.Context(), valid); !apierrors.IsForbidden(err) {
			t.Errorf("a viewer deleting a segment: got %v, want Forbidden (RBAC)", err)
		}
		if err := as(t, "olivia").Delete(t.Context(), valid); err != nil {
			t.Errorf("an admin deleting a segment: %v", err)
		}
		assertAbsent(t, valid)
	})
}

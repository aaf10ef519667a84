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
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/testenv"
)

func nightly(ns, name string, mut func(*exagentv1.AgentScheduleSpec)) *exagentv1.AgentSchedule {
	s := &exagentv1.AgentSchedule{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: exagentv1.AgentScheduleSpec{
			Schedule: "30 2 * * *", TimeZone: "Europe/Berlin",
			RunTemplate: exagentv1.ScheduleRunTemplate{AgentRef: exagentv1.LocalObjectReference{Name: "payments"}, Input: "pay the nightly invoices"},
		},
	}
	if mut != nil {
		mut(&s.Spec)
	}
	return s
}

func mustRefuse(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("admitted, want refused with %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("refused with %v, want it to say %q", err, w)
		}
	}
}

func setterOf(t *testing.T, s *exagentv1.AgentSchedule) exagentv1.Actor {
	t.Helper()
	var a exagentv1.Actor
	if err := json.Unmarshal([]byte(s.Annotations[exagentv1.AnnotationSpecSetBy]), &a); err != nil {
		t.Fatalf("the schedule's %s: %v", exagentv1.AnnotationSpecSetBy, err)
	}
	return a
}

// scheduledRun is a run as the schedule controller makes it, created by
// the admin (the manager's identity in this suite).
func scheduledRun(ns, name string, sched *exagentv1.AgentSchedule, by *exagentv1.Actor) *exagentv1.AgentRun {
	r := &exagentv1.AgentRun{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{exagentv1.LabelSchedule: sched.Name}},
		Spec:       sched.Spec.RunTemplate.RunSpec(by),
	}
	if sched.UID != "" {
		r.OwnerReferences = []metav1.OwnerReference{{APIVersion: exagentv1.GroupVersion.String(), Kind: "AgentSchedule",
			Name: sched.Name, UID: sched.UID, Controller: ptr.To(true)}}
	}
	return r
}

// TestScheduleAdmission: a schedule's cron and time zone are checked at
// admission, naming the field; setting one needs the right to create runs;
// admission records who set its spec, whatever the client wrote. The
// manager's runs of a schedule carry that person as requestedBy — so
// under forbidSelfApproval they may not approve them — and a run the
// manager creates is refused when it names no existing schedule or
// another requester.
func TestScheduleAdmission(t *testing.T) {
	s := newScenario(t)
	dave := as(t, "dave") // editor and approver of payments (forbidSelfApproval)

	mustRefuse(t, dave.Create(t.Context(), nightly(s.ns, "bad-cron", func(sp *exagentv1.AgentScheduleSpec) { sp.Schedule = "30 2 * *" })),
		"spec.schedule", "not a 5-field cron expression")
	mustRefuse(t, dave.Create(t.Context(), nightly(s.ns, "bad-every", func(sp *exagentv1.AgentScheduleSpec) { sp.Schedule = "@every 1h" })),
		"spec.schedule", "@every is not supported")
	mustRefuse(t, dave.Create(t.Context(), nightly(s.ns, "bad-zone", func(sp *exagentv1.AgentScheduleSpec) { sp.TimeZone = "Europe/Atlantis" })),
		"spec.timeZone", "unknown IANA time zone")
	mustRefuse(t, dave.Create(t.Context(), nightly(s.ns, "bad-lease", func(sp *exagentv1.AgentScheduleSpec) { sp.RunTemplate.LeaseDuration = "1s" })),
		"spec.runTemplate.leaseDuration")
	mustRefuse(t, dave.Create(t.Context(), nightly(s.ns, "bad-sa", func(sp *exagentv1.AgentScheduleSpec) { sp.RunTemplate.ServiceAccountName = "deployer" })),
		"spec.runTemplate.serviceAccountName", "may not use ServiceAccount")

	// May write schedules, may not create runs.
	createRole(t, s.ns, "schedule-writer",
		rbacv1.PolicyRule{APIGroups: []string{"exagent.io"}, Resources: []string{"agentschedules"}, Verbs: []string{"create", "get"}})
	bind(t, s.ns, "victor", "Role", "schedule-writer")
	mustRefuse(t, as(t, "victor").Create(t.Context(), nightly(s.ns, "victors", nil)),
		"spec.runTemplate", `"victor" may not create AgentRuns`)

	// The setter is stamped, not written.
	forged := nightly(s.ns, "nightly", nil)
	forged.Annotations = map[string]string{exagentv1.AnnotationSpecSetBy: `{"username":"alice"}`}
	if err := dave.Create(t.Context(), forged); err != nil {
		t.Fatal(err)
	}
	if by := setterOf(t, forged); by.Username != "dave" {
		t.Fatalf("setter = %+v, want dave", by)
	}
	forged.Annotations[exagentv1.AnnotationSpecSetBy] = `{"username":"alice"}`
	if err := dave.Update(t.Context(), forged); err != nil {
		t.Fatal(err)
	}
	if by := setterOf(t, forged); by.Username != "dave" {
		t.Fatalf("setter after a metadata update = %+v, want dave still", by)
	}
	setter := setterOf(t, forged)
	if err := signer.VerifySchedule(forged); err != nil {
		t.Errorf("the schedule's setter is not sealed after a metadata update: %v", err)
	}

	// The manager's run of the schedule, as dave.
	run := scheduledRun(s.ns, "nightly-1", forged, &setter)
	if err := admin.Create(t.Context(), run); err != nil {
		t.Fatalf("the manager's scheduled run: %v", err)
	}
	if err := signer.VerifyRequester(run); err != nil {
		t.Errorf("the scheduled run's requester is not sealed: %v", err)
	}
	run.Status = exagentv1.AgentRunStatus{
		Phase: exagentv1.PhaseAwaitingApproval, Revision: 1, Cursor: exagentv1.Cursor{Step: 1, Stage: exagentv1.StageBatch},
		Calls: []exagentv1.ToolCall{{ID: "c1", Tool: "pay", Args: `{"amount":500}`, PayloadHash: payloadHash, State: exagentv1.CallPending}},
		Approvals: []exagentv1.Approval{{ID: "a1", CallID: "c1", PayloadHash: payloadHash, Revision: 1,
			State: exagentv1.ApprovalPending, RequestedAt: metav1.Now()}},
		PendingApprovals: 1,
	}
	if err := admin.Status().Update(t.Context(), run); err != nil {
		t.Fatal(err)
	}
	mustRefuse(t, dave.Create(t.Context(), approve(s.ns, "dave-approves-nightly", "nightly-1")),
		`forbidSelfApproval: "dave" requested this run and cannot decide on it`)
	if err := as(t, "alice").Create(t.Context(), approve(s.ns, "alice-approves-nightly", "nightly-1")); err != nil {
		t.Errorf("alice's approval of the scheduled run: %v", err)
	}

	mustRefuse(t, admin.Create(t.Context(), scheduledRun(s.ns, "nowhere-1", nightly(s.ns, "nowhere", nil), &setter)),
		"AgentSchedule nowhere", "only for schedules that exist")
	alice := exagentv1.Actor{Username: "alice"}
	mustRefuse(t, admin.Create(t.Context(), scheduledRun(s.ns, "nightly-2", forged, &alice)),
		"spec.requestedBy", `the person who last set AgentSchedule nightly's spec ("dave")`)
	other := scheduledRun(s.ns, "nightly-3", forged, &setter)
	other.Spec.AgentRef.Name = "billing"
	mustRefuse(t, admin.Create(t.Context(), other), "spec.runTemplate asks")
	// No schedule, no conversation, no delegation: the manager's own run
	// may not name anyone else as its requester.
	plain := scheduledRun(s.ns, "plain-1", forged, &setter)
	plain.Labels, plain.OwnerReferences = nil, nil
	mustRefuse(t, admin.Create(t.Context(), plain), "spec.requestedBy", "a client-written identity")
}

// TestScheduleSample: config/samples/schedules/nightly.yaml is admitted.
func TestScheduleSample(t *testing.T) {
	ns := newNamespace(t)
	bind(t, ns, "dave", "ClusterRole", "exagent-editor")
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "samples", "schedules", "nightly.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(data), "\n---\n")
	if len(docs) != 2 {
		t.Fatalf("%d documents, want the Agent and the schedule", len(docs))
	}
	var agent exagentv1.Agent
	var sched exagentv1.AgentSchedule
	for i, o := range []client.Object{&agent, &sched} {
		if err := yaml.UnmarshalStrict([]byte(docs[i]), o); err != nil {
			t.Fatal(err)
		}
		o.SetNamespace(ns)
		if err := as(t, "dave").Create(t.Context(), o); err != nil {
			t.Fatalf("creating %s: %v", o.GetName(), err)
		}
	}
	var got exagentv1.AgentSchedule
	if err := admin.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: sched.Name}, &got); err != nil {
		t.Fatal(err)
	}
	if by := setterOf(t, &got); by.Username != "dave" {
		t.Errorf("setter = %+v, want dave", by)
	}
}

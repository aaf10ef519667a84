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

package webhook_test

import (
	"context"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/served"
	"github.com/exagent-io/exagent/webhook"
)

const managerName = "system:serviceaccount:exagent-system:exagent-manager"

func createIn(t *testing.T, namespace, user string) context.Context {
	return admission.NewContextWithRequest(t.Context(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: admissionv1.Create, Namespace: namespace, UserInfo: authenticationv1.UserInfo{Username: user}}})
}

// TestRunsAreStampedAdmitted: every run the mutating webhook admits carries
// the manager's identity in exagent.io/admitted-by, whatever the client
// wrote there — child runs too.
func TestRunsAreStampedAdmitted(t *testing.T) {
	w := &webhook.AgentRunWebhook{Manager: managerName}
	forged := run(func(r *exagentv1.AgentRun) {
		r.Annotations = map[string]string{exagentv1.AnnotationAdmittedBy: "someone-else"}
	})
	if err := w.Default(createIn(t, "ns", "dave"), forged); err != nil {
		t.Fatal(err)
	}
	if got := forged.Annotations[exagentv1.AnnotationAdmittedBy]; got != managerName {
		t.Errorf("admitted-by = %q, want the manager %q", got, managerName)
	}
	child := run(func(r *exagentv1.AgentRun) {
		r.Spec.RequestedBy = &exagentv1.Actor{Username: "dave"}
		r.Spec.Delegation = &exagentv1.Delegation{
			Parent: exagentv1.RunReference{Name: "root", UID: "u"}, Root: exagentv1.RunReference{Name: "root", UID: "u"},
			CallID: "c1", Ancestry: []string{"u/c1"},
		}
	})
	if err := w.Default(createIn(t, "ns", managerName), child); err != nil {
		t.Fatal(err)
	}
	if got := child.Annotations[exagentv1.AnnotationAdmittedBy]; got != managerName {
		t.Errorf("a child run's admitted-by = %q, want %q", got, managerName)
	}
}

// TestUnservedNamespaceRefused: a manager serving team-a only refuses runs
// and decisions created elsewhere — its webhook configurations should not
// have sent them — saying which namespaces it serves, and stamps nothing.
// In team-a it admits as before.
func TestUnservedNamespaceRefused(t *testing.T) {
	ns, err := served.Parse("team-a")
	if err != nil {
		t.Fatal(err)
	}
	runs := &webhook.AgentRunWebhook{Manager: managerName, Namespaces: ns}
	decisions := &webhook.ApprovalDecisionWebhook{Manager: managerName, Namespaces: ns}
	wantRefused := func(what string, err error) {
		t.Helper()
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "no exagent manager serves namespace team-b") ||
			!strings.Contains(err.Error(), "serves only team-a") {
			t.Errorf("%s in team-b: %v, want Forbidden naming the namespaces served", what, err)
		}
	}
	elsewhere := run(func(r *exagentv1.AgentRun) { r.Namespace = "team-b" })
	wantRefused("defaulting a run", runs.Default(createIn(t, "team-b", "dave"), elsewhere))
	if _, ok := elsewhere.Annotations[exagentv1.AnnotationAdmittedBy]; ok {
		t.Errorf("a refused run was stamped admitted: %v", elsewhere.Annotations)
	}
	_, err = runs.ValidateCreate(createIn(t, "team-b", "dave"), elsewhere)
	wantRefused("validating a run", err)
	d := decision(func(d *exagentv1.ApprovalDecision) { d.Namespace = "team-b"; d.Spec.Actor = nil })
	wantRefused("defaulting a decision", decisions.Default(createIn(t, "team-b", "alice"), d))
	_, err = decisions.ValidateCreate(createIn(t, "team-b", "alice"), decision(func(d *exagentv1.ApprovalDecision) { d.Namespace = "team-b" }))
	wantRefused("validating a decision", err)

	here := run(func(r *exagentv1.AgentRun) { r.Namespace = "team-a" })
	if err := runs.Default(createIn(t, "team-a", "dave"), here); err != nil {
		t.Fatalf("a run in team-a: %v", err)
	}
	if here.Annotations[exagentv1.AnnotationAdmittedBy] != managerName {
		t.Errorf("a run in team-a is not stamped: %v", here.Annotations)
	}
}

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
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/webhook"
)

// TestChildRunServiceAccountNotReviewed: a child run (spec.delegation,
// created only by the manager) carries its parent's ServiceAccount, which
// was authorized when the root was created, so admitting it reads no Agent
// and asks no SubjectAccessReview: this webhook has no client to ask with,
// and admits the child. A run of anyone else naming the same
// ServiceAccount is not admitted without asking (here: an internal error,
// never an allow).
func TestChildRunServiceAccountNotReviewed(t *testing.T) {
	w := &webhook.AgentRunWebhook{Manager: "system:serviceaccount:exagent-system:exagent-manager"}
	ctxAs := func(user string) context.Context {
		return admission.NewContextWithRequest(t.Context(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Operation: admissionv1.Create, UserInfo: authenticationv1.UserInfo{Username: user}}})
	}
	// A request without a credential id, as this one, is stamped with the
	// credential Unknown (authz.ActorFromUserInfo).
	child := run(func(r *exagentv1.AgentRun) {
		r.Spec.ServiceAccountName = "deployer"
		r.Spec.RequestedBy = &exagentv1.Actor{Username: "dave", Credential: exagentv1.CredentialUnknown}
		r.Spec.Delegation = &exagentv1.Delegation{
			Parent: exagentv1.RunReference{Name: "root", UID: "u"}, Root: exagentv1.RunReference{Name: "root", UID: "u"},
			CallID: "c1", Ancestry: []string{"u/c1"},
		}
	})
	if _, err := w.ValidateCreate(ctxAs(w.Manager), child); err != nil {
		t.Errorf("the manager's child run naming its parent's ServiceAccount: %v, want admitted", err)
	}
	root := run(func(r *exagentv1.AgentRun) {
		r.Spec.ServiceAccountName = "deployer"
		r.Spec.RequestedBy = &exagentv1.Actor{Username: "dave", Credential: exagentv1.CredentialUnknown}
	})
	if _, err := w.ValidateCreate(ctxAs("dave"), root); err == nil || !strings.Contains(err.Error(), "no client to authorize spec.serviceAccountName") {
		t.Errorf("dave's run naming deployer with no way to ask: %v, want refused", err)
	}
	def := run(func(r *exagentv1.AgentRun) {
		r.Spec.RequestedBy = &exagentv1.Actor{Username: "dave", Credential: exagentv1.CredentialUnknown}
	})
	if _, err := w.ValidateCreate(ctxAs("dave"), def); err != nil {
		t.Errorf("dave's run as the default ServiceAccount: %v, want admitted without asking", err)
	}
}

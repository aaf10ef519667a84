package integration_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
	"github.com/exagent-io/exagent/authz"
)

// TestLoadSeal: every replica loads the same key — the first one creates
// the Secret, the others read it — so a decision sealed by one replica's
// webhook verifies in another replica's controller.
func TestLoadSeal(t *testing.T) {
	ref := types.NamespacedName{Namespace: managerNamespace, Name: authz.DefaultSealSecretName}
	again, err := authz.LoadSeal(t.Context(), admin, admin, ref)
	if err != nil {
		t.Fatal(err)
	}
	s := newScenario(t)
	d := approve(s.ns, "alice-approves", runPayments)
	if err := as(t, "alice").Create(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	stored := get(t, s.ns, d.Name, &exagentv1.ApprovalDecision{})
	if stored.Annotations[authz.SealAnnotation] == "" {
		t.Fatalf("admitted decision carries no %s annotation", authz.SealAnnotation)
	}
	if err := again.Verify(stored); err != nil {
		t.Errorf("a second load of the key does not verify the webhook's seal: %v", err)
	}
}

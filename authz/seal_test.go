package authz_test

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
	"github.com/exagent-io/exagent/authz"
)

func sealedDecision(t *testing.T, s *authz.Seal) *exagentv1.ApprovalDecision {
	t.Helper()
	d := &exagentv1.ApprovalDecision{
		ObjectMeta: metav1.ObjectMeta{Name: "d1", Namespace: "ns"},
		Spec: exagentv1.ApprovalDecisionSpec{
			RunRef:     exagentv1.LocalObjectReference{Name: "run"},
			ApprovalID: "a1", Decision: exagentv1.DecisionApprove, OperationID: "d1",
			Actor: &exagentv1.Actor{Username: "alice", Groups: []string{"g", "system:authenticated"}},
		},
	}
	if err := s.Stamp(d); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestSeal(t *testing.T) {
	seal, err := authz.NewSeal(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	other, err := authz.NewSeal(bytes.Repeat([]byte{8}, 32))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		mut       func(*exagentv1.ApprovalDecision)
		verifier  *authz.Seal
		wantCheck authz.Check
	}{
		"as admitted":               {mut: func(*exagentv1.ApprovalDecision) {}},
		"other metadata may change": {mut: func(d *exagentv1.ApprovalDecision) { d.Labels = map[string]string{"a": "b"} }},
		"no seal":                   {mut: func(d *exagentv1.ApprovalDecision) { delete(d.Annotations, authz.SealAnnotation) }, wantCheck: authz.CheckActor},
		"forged actor":              {mut: func(d *exagentv1.ApprovalDecision) { d.Spec.Actor.Username = "mallory" }, wantCheck: authz.CheckActor},
		"an added group": {mut: func(d *exagentv1.ApprovalDecision) {
			d.Spec.Actor.Groups = append(d.Spec.Actor.Groups, "system:masters")
		}, wantCheck: authz.CheckActor},
		"another decision":            {mut: func(d *exagentv1.ApprovalDecision) { d.Spec.Decision = exagentv1.DecisionDeny }, wantCheck: authz.CheckActor},
		"copied under another name":   {mut: func(d *exagentv1.ApprovalDecision) { d.Name = "d2" }}, // same spec and operationID: the same decision
		"copied to another namespace": {mut: func(d *exagentv1.ApprovalDecision) { d.Namespace = "other" }, wantCheck: authz.CheckActor},
		"another key":                 {mut: func(*exagentv1.ApprovalDecision) {}, verifier: other, wantCheck: authz.CheckActor},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := sealedDecision(t, seal)
			tc.mut(d)
			v := seal
			if tc.verifier != nil {
				v = tc.verifier
			}
			if diff := cmp.Diff(tc.wantCheck, authz.DeniedCheck(v.Verify(d))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewSealNeedsAKey(t *testing.T) {
	if _, err := authz.NewSeal(make([]byte, 16)); err == nil {
		t.Error("a 16-byte key was accepted")
	}
}

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

package authz_test

import (
	"bytes"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/authz"
)

// TestScheduleSeal: the seal verifies the setter and spec it was made for,
// and nothing else: another setter, a changed spec, another key or no seal
// at all are refused with the reason.
func TestScheduleSeal(t *testing.T) {
	signer, err := authz.NewSigner(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	other, err := authz.NewSigner(bytes.Repeat([]byte{8}, 32))
	if err != nil {
		t.Fatal(err)
	}
	sealed := func() *exagentv1.AgentSchedule {
		s := &exagentv1.AgentSchedule{
			ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "ops",
				Annotations: map[string]string{exagentv1.AnnotationSpecSetBy: `{"username":"dave"}`}},
			Spec: exagentv1.AgentScheduleSpec{Schedule: "@daily",
				RunTemplate: exagentv1.ScheduleRunTemplate{AgentRef: exagentv1.LocalObjectReference{Name: "ops"}, Input: "review"}},
		}
		if err := signer.SignSchedule(s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if err := signer.VerifySchedule(sealed()); err != nil {
		t.Fatalf("the sealed schedule: %v", err)
	}
	for name, tc := range map[string]struct {
		edit func(*exagentv1.AgentSchedule)
		by   *authz.Signer
		want string
	}{
		"another setter": {edit: func(s *exagentv1.AgentSchedule) {
			s.Annotations[exagentv1.AnnotationSpecSetBy] = `{"username":"alice"}`
		}, want: "does not match"},
		"another input":   {edit: func(s *exagentv1.AgentSchedule) { s.Spec.RunTemplate.Input = "delete everything" }, want: "does not match"},
		"another key":     {by: other, want: "does not match"},
		"no seal":         {edit: func(s *exagentv1.AgentSchedule) { delete(s.Annotations, exagentv1.AnnotationSpecSetBySignature) }, want: "past the exagent admission webhook"},
		"other namespace": {edit: func(s *exagentv1.AgentSchedule) { s.Namespace = "payments" }, want: "does not match"},
	} {
		t.Run(name, func(t *testing.T) {
			s := sealed()
			if tc.edit != nil {
				tc.edit(s)
			}
			by := signer
			if tc.by != nil {
				by = tc.by
			}
			if err := by.VerifySchedule(s); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("VerifySchedule = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// TestTriggerSeal: a trigger's seal verifies its own setter and spec; a
// changed input expression or setter is refused, and a schedule's seal
// (another purpose) never verifies a trigger.
func TestTriggerSeal(t *testing.T) {
	signer, err := authz.NewSigner(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	sealed := func() *exagentv1.AgentTrigger {
		tr := &exagentv1.AgentTrigger{
			ObjectMeta: metav1.ObjectMeta{Name: "alerts", Namespace: "ops",
				Annotations: map[string]string{exagentv1.AnnotationSpecSetBy: `{"username":"dave"}`}},
			Spec: exagentv1.AgentTriggerSpec{Input: `"alert " + event.labels.alertname`,
				RunTemplate: exagentv1.ScheduleRunTemplate{AgentRef: exagentv1.LocalObjectReference{Name: "ops"}, Input: "triage"}},
		}
		if err := signer.SignTrigger(tr); err != nil {
			t.Fatal(err)
		}
		return tr
	}
	if err := signer.VerifyTrigger(sealed()); err != nil {
		t.Fatalf("the sealed trigger: %v", err)
	}
	for name, edit := range map[string]func(*exagentv1.AgentTrigger){
		"another setter": func(tr *exagentv1.AgentTrigger) {
			tr.Annotations[exagentv1.AnnotationSpecSetBy] = `{"username":"alice"}`
		},
		"another input": func(tr *exagentv1.AgentTrigger) { tr.Spec.Input = `"rm -rf"` },
		"a schedule's seal": func(tr *exagentv1.AgentTrigger) {
			s := &exagentv1.AgentSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: tr.Namespace, Annotations: map[string]string{
				exagentv1.AnnotationSpecSetBy: tr.Annotations[exagentv1.AnnotationSpecSetBy]}}}
			if err := signer.SignSchedule(s); err != nil {
				t.Fatal(err)
			}
			tr.Annotations[exagentv1.AnnotationSpecSetBySignature] = s.Annotations[exagentv1.AnnotationSpecSetBySignature]
		},
	} {
		t.Run(name, func(t *testing.T) {
			tr := sealed()
			edit(tr)
			if err := signer.VerifyTrigger(tr); err == nil || !strings.Contains(err.Error(), "does not match") {
				t.Errorf("VerifyTrigger = %v, want a mismatch", err)
			}
		})
	}
}

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

package authz

import (
	"crypto/hmac"
	"fmt"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

const (
	purposeSchedule = "AgentSchedule.spec"
	purposeTrigger  = "AgentTrigger.spec"
)

// signedSetter is what the seal of a schedule's or trigger's setter
// covers: its kind, its namespace, its spec and the setter admission
// stamped for that spec. Their runs are requested by the setter, so a
// setter written past a bypassed webhook would let its real author
// approve what they asked under someone else's name; sealed, such an
// object makes no run. The name is left out (an object made with
// metadata.generateName has none at admission): a seal copied onto
// another object of the same kind and namespace verifies only with the
// same spec and setter — runs that person did set up.
type signedSetter struct {
	Purpose   string `json:"purpose"`
	Namespace string `json:"namespace"`
	Setter    string `json:"setter"`
	Spec      any    `json:"spec"`
}

// SignSchedule writes the seal of sched's spec and stamped setter into its
// annotations (exagentv1.AnnotationSpecSetBySignature).
func (s *Signer) SignSchedule(sched *exagentv1.AgentSchedule) error {
	return s.signSetter(purposeSchedule, sched.Namespace, sched.Name, &sched.Annotations, sched.Spec)
}

// VerifySchedule returns nil when sched's setter and spec carry the
// admission webhook's seal, and otherwise an error that says why the
// setter is unknown.
func (s *Signer) VerifySchedule(sched *exagentv1.AgentSchedule) error {
	return s.verifySetter(purposeSchedule, "schedule", sched.Namespace, sched.Name, sched.Annotations, sched.Spec)
}

// SignTrigger seals a trigger's spec and stamped setter, as SignSchedule.
func (s *Signer) SignTrigger(t *exagentv1.AgentTrigger) error {
	return s.signSetter(purposeTrigger, t.Namespace, t.Name, &t.Annotations, t.Spec)
}

// VerifyTrigger checks a trigger's seal, as VerifySchedule.
func (s *Signer) VerifyTrigger(t *exagentv1.AgentTrigger) error {
	return s.verifySetter(purposeTrigger, "trigger", t.Namespace, t.Name, t.Annotations, t.Spec)
}

func (s *Signer) signSetter(purpose, namespace, name string, annotations *map[string]string, spec any) error {
	v, err := s.mac(signedSetter{Purpose: purpose, Namespace: namespace, Setter: (*annotations)[exagentv1.AnnotationSpecSetBy], Spec: spec})
	if err != nil {
		return fmt.Errorf("signing the setter of %s/%s: %w", namespace, name, err)
	}
	if *annotations == nil {
		*annotations = map[string]string{}
	}
	(*annotations)[exagentv1.AnnotationSpecSetBySignature] = v
	return nil
}

func (s *Signer) verifySetter(purpose, what, namespace, name string, annotations map[string]string, spec any) error {
	got, ok := annotations[exagentv1.AnnotationSpecSetBySignature]
	if !ok {
		return fmt.Errorf("the %s has no %s annotation: it was set past the exagent admission webhook", what, exagentv1.AnnotationSpecSetBySignature)
	}
	want, err := s.mac(signedSetter{Purpose: purpose, Namespace: namespace, Setter: annotations[exagentv1.AnnotationSpecSetBy], Spec: spec})
	if err != nil {
		return fmt.Errorf("signing the setter of %s/%s: %w", namespace, name, err)
	}
	if !hmac.Equal([]byte(got), []byte(want)) {
		return fmt.Errorf("the %s's %s annotation does not match its spec and %s: they were not stamped by the exagent admission webhook",
			what, exagentv1.AnnotationSpecSetBySignature, exagentv1.AnnotationSpecSetBy)
	}
	return nil
}

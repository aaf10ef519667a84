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

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
)

const purposeSchedule = "AgentSchedule.spec"

// signedSchedule is what a schedule's seal covers: its namespace, its spec
// and the setter admission stamped for that spec. A schedule's runs are
// requested by the setter, so a setter written past a bypassed webhook
// would let its real author approve what they asked under someone else's
// name; sealed, such a schedule makes no run. The name is left out (a
// schedule made with metadata.generateName has none at admission): a seal
// copied onto another schedule of the same namespace verifies only with
// the same spec and setter — runs that person did set up.
type signedSchedule struct {
	Purpose   string                      `json:"purpose"`
	Namespace string                      `json:"namespace"`
	Setter    string                      `json:"setter"`
	Spec      exagentv1.AgentScheduleSpec `json:"spec"`
}

func scheduleSigned(sched *exagentv1.AgentSchedule) signedSchedule {
	return signedSchedule{Purpose: purposeSchedule, Namespace: sched.Namespace,
		Setter: sched.Annotations[exagentv1.AnnotationSpecSetBy], Spec: sched.Spec}
}

// SignSchedule writes the seal of sched's spec and stamped setter into its
// annotations (exagentv1.AnnotationSpecSetBySignature).
func (s *Signer) SignSchedule(sched *exagentv1.AgentSchedule) error {
	v, err := s.mac(scheduleSigned(sched))
	if err != nil {
		return fmt.Errorf("signing the setter of schedule %s/%s: %w", sched.Namespace, sched.Name, err)
	}
	if sched.Annotations == nil {
		sched.Annotations = map[string]string{}
	}
	sched.Annotations[exagentv1.AnnotationSpecSetBySignature] = v
	return nil
}

// VerifySchedule returns nil when sched's setter and spec carry the
// admission webhook's seal, and otherwise an error that says why the
// setter is unknown.
func (s *Signer) VerifySchedule(sched *exagentv1.AgentSchedule) error {
	got, ok := sched.Annotations[exagentv1.AnnotationSpecSetBySignature]
	if !ok {
		return fmt.Errorf("the schedule has no %s annotation: it was set past the exagent admission webhook", exagentv1.AnnotationSpecSetBySignature)
	}
	want, err := s.mac(scheduleSigned(sched))
	if err != nil {
		return fmt.Errorf("signing the setter of schedule %s/%s: %w", sched.Namespace, sched.Name, err)
	}
	if !hmac.Equal([]byte(got), []byte(want)) {
		return fmt.Errorf("the schedule's %s annotation does not match its spec and %s: they were not stamped by the exagent admission webhook",
			exagentv1.AnnotationSpecSetBySignature, exagentv1.AnnotationSpecSetBy)
	}
	return nil
}

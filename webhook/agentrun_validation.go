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

package webhook

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/loop"
)

// ValidateAgentRun checks a run on its own. old is nil on create; on update
// only the GitOps rule is checked here: that the spec does not change (a
// run binds what it was created with) is the admission policy's rule, in
// one place (config/policy/agentrun-spec.yaml). A missing
// Agent is deliberately not checked: GitOps may apply a run before its Agent,
// and the controller waits with Ready=False, reason AgentNotFound.
//
// Durations are checked here, before any model or tool IO: Never disables
// approvalTimeout and activeTimeLimit, a lease cannot be Never, and zero or
// malformed values are rejected rather than read as "unset". A lease
// shorter than exagentv1.MinLeaseDuration is rejected too: its owner would
// lose the claim while alive, and every loss re-sends a paid model request.
//
// A run a GitOps tool applies (Argo CD, Flux: their tracking label or
// annotation, loop.GitOpsManager) cannot carry spec.ttlSecondsAfterFinished:
// see validateGitOpsTTL.
func ValidateAgentRun(newObj, old *exagentv1.AgentRun) field.ErrorList {
	spec := field.NewPath("spec")
	if old != nil {
		if tool, _ := loop.GitOpsManager(old.Labels, old.Annotations); tool != "" {
			return nil // already managed: a run admitted before the rule keeps its own TTL
		}
		return validateGitOpsTTL(newObj)
	}
	s := &newObj.Spec
	errs := validateObjectName(spec.Child("agentRef", "name"), s.AgentRef.Name)
	switch {
	case s.Input == "":
		errs = append(errs, field.Required(spec.Child("input"), "the user message that starts the run"))
	case len(s.Input) > exagentv1.MaxInputBytes:
		errs = append(errs, field.TooLong(spec.Child("input"), "", exagentv1.MaxInputBytes))
	}
	errs = append(errs, validateDuration(spec.Child("approvalTimeout"), s.ApprovalTimeout, true)...)
	errs = append(errs, validateDuration(spec.Child("activeTimeLimit"), s.ActiveTimeLimit, true)...)
	errs = append(errs, validateLease(spec.Child("leaseDuration"), s.LeaseDuration)...)
	if ttl := s.TTLSecondsAfterFinished; ttl != nil && *ttl < 0 {
		errs = append(errs, field.Invalid(spec.Child("ttlSecondsAfterFinished"), *ttl,
			"seconds the run is kept after it ended: 0 deletes it as soon as it ended; leave it unset to take its Agent's retention"))
	}
	errs = append(errs, validateGitOpsTTL(newObj)...)
	if s.ServiceAccountName != "" {
		// The builtin tools impersonate system:serviceaccount:<ns>:<name>;
		// a name the apiserver could never hold would only fail later.
		for _, msg := range validation.IsDNS1123Subdomain(s.ServiceAccountName) {
			errs = append(errs, field.Invalid(spec.Child("serviceAccountName"), s.ServiceAccountName, msg))
		}
	}
	return append(errs, validateActor(spec.Child("requestedBy"), s.RequestedBy)...)
}

// validateLease checks spec.leaseDuration: a positive duration of at least
// exagentv1.MinLeaseDuration (unset means the default, 30s).
func validateLease(path *field.Path, d exagentv1.Duration) field.ErrorList {
	if errs := validateDuration(path, d, false); len(errs) > 0 || !d.IsSet() {
		return errs
	}
	if v, _, _ := d.Parse(0); v < exagentv1.MinLeaseDuration {
		return field.ErrorList{field.Invalid(path, string(d), fmt.Sprintf(
			"must be at least %s: the owner renews at half the lease, and a shorter one makes a live owner lose its run, "+
				"re-sending the step's model request (charged) or leaving a tool call Uncertain", exagentv1.MinLeaseDuration))}
	}
	return nil
}

// validateGitOpsTTL refuses a TTL on a run a GitOps tool applies. Deleting
// such a run does not end it: the next sync re-creates it from the source
// under a new UID, and every tool call runs again under new idempotency
// keys (a payment paid twice), once per TTL, for as long as the source
// declares it. A refusal fails the sync, loudly, before any effect; a
// warning would let the first repetition happen (docs/gitops.md,
// Retention). The run is removed by removing it from the source (the
// tool prunes it). A TTL from the Agent or the manager's default is not
// the author's: retention does not apply it to such a run
// (loop.KeptFromGitOps) and says so in an Event.
func validateGitOpsTTL(run *exagentv1.AgentRun) field.ErrorList {
	ttl := run.Spec.TTLSecondsAfterFinished
	tool, mark := loop.GitOpsManager(run.Labels, run.Annotations)
	if ttl == nil || tool == "" {
		return nil
	}
	return field.ErrorList{field.Forbidden(field.NewPath("spec", "ttlSecondsAfterFinished"), fmt.Sprintf(
		"%s manages this run (%s): deleting it after its TTL would make the next sync re-create it under a new UID, "+
			"running every tool call again under new idempotency keys. Remove ttlSecondsAfterFinished and delete the run "+
			"by removing it from the source (prune), or create runs outside GitOps (docs/gitops.md, Retention)", tool, mark))}
}

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
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/authz"
	"github.com/exagent-io/exagent/internal/served"
	"github.com/exagent-io/exagent/internal/trigger"
)

// As for schedules: the mutating webhook alone writes the setter (at every
// CREATE and UPDATE), the validating one runs when the spec changes.
// +kubebuilder:webhook:path=/mutate-exagent-io-v1alpha1-agenttrigger,mutating=true,failurePolicy=fail,sideEffects=None,groups=exagent.io,resources=agenttriggers,verbs=create;update,versions=v1beta1,name=magenttrigger.exagent.io,admissionReviewVersions=v1,timeoutSeconds=10,reinvocationPolicy=Never
// +kubebuilder:webhook:path=/validate-exagent-io-v1alpha1-agenttrigger,mutating=false,failurePolicy=fail,sideEffects=None,groups=exagent.io,resources=agenttriggers,verbs=create;update,versions=v1beta1,name=vagenttrigger.exagent.io,admissionReviewVersions=v1,timeoutSeconds=10,patch=`{"matchConditions":[{"name":"create-or-spec-changed","expression":"request.operation != 'UPDATE' || object.spec != oldObject.spec"}]}`

var agentTriggerGK = schema.GroupKind{Group: exagentv1.GroupVersion.Group, Kind: "AgentTrigger"}

// Bounds of a trigger's dedupWindow: under a second dedups nothing; past
// a week, a key remembered that long is an outage, not a dedup.
const (
	minDedupWindow = time.Second
	maxDedupWindow = 7 * 24 * time.Hour
)

// AgentTriggerWebhook records who set a trigger's spec and checks that
// they may: a trigger's runs are requested by that person (DESIGN §19),
// so setting one needs the right to create runs and to use the
// ServiceAccounts it names. Its expressions are compiled here, so a
// trigger that could never render is refused, naming the field, instead
// of failing each delivery.
type AgentTriggerWebhook struct {
	// Signer, when set, seals the stamped setter with the spec.
	Signer *authz.Signer
	// Client creates the SubjectAccessReviews; Reader reads the Agent.
	Client client.Client
	Reader client.Reader
	// Namespaces are those the manager serves.
	Namespaces served.Namespaces
}

var (
	_ admission.Defaulter[*exagentv1.AgentTrigger] = &AgentTriggerWebhook{}
	_ admission.Validator[*exagentv1.AgentTrigger] = &AgentTriggerWebhook{}
)

// Default stamps exagentv1.AnnotationSpecSetBy (stampSpecSetter) and seals it.
func (w *AgentTriggerWebhook) Default(ctx context.Context, t *exagentv1.AgentTrigger) error {
	req, err := requester(ctx)
	if err != nil {
		return err
	}
	old := &exagentv1.AgentTrigger{}
	if !isCreate(req) {
		if err := json.Unmarshal(req.OldObject.Raw, old); err != nil {
			return kerrors.NewBadRequest(fmt.Sprintf("decoding the AgentTrigger as it was: %v", err))
		}
	}
	changed := isCreate(req) || !equality.Semantic.DeepEqual(old.Spec, t.Spec)
	if !stampSpecSetter(req, &t.Annotations, old.Annotations, changed) {
		return nil
	}
	if w.Signer != nil {
		return w.Signer.SignTrigger(t)
	}
	return nil
}

// ValidateCreate checks the trigger and that its creator may set it.
func (w *AgentTriggerWebhook) ValidateCreate(ctx context.Context, t *exagentv1.AgentTrigger) (admission.Warnings, error) {
	return w.validate(ctx, t)
}

// ValidateUpdate checks a changed spec as a new one.
func (w *AgentTriggerWebhook) ValidateUpdate(ctx context.Context, _, t *exagentv1.AgentTrigger) (admission.Warnings, error) {
	return w.validate(ctx, t)
}

// ValidateDelete allows deletes (the webhook is not registered for them).
func (w *AgentTriggerWebhook) ValidateDelete(context.Context, *exagentv1.AgentTrigger) (admission.Warnings, error) {
	return nil, nil
}

func (w *AgentTriggerWebhook) validate(ctx context.Context, t *exagentv1.AgentTrigger) (admission.Warnings, error) {
	req, err := requester(ctx)
	if err != nil {
		return nil, err
	}
	if err := refuseUnserved(w.Namespaces, schema.GroupResource{Group: agentTriggerGK.Group, Resource: "agenttriggers"}, t.Name, req.Namespace); err != nil {
		return nil, err
	}
	if errs := ValidateAgentTrigger(t); len(errs) > 0 {
		return nil, invalid(agentTriggerGK, t.Name, errs)
	}
	if err := authorizeSetter(ctx, w.Client, w.Reader, req, agentTriggerGK, t.Name, t.Namespace, &t.Spec.RunTemplate, "trigger"); err != nil {
		return nil, err
	}
	if ke := t.Spec.Source.KubernetesEvents; ke != nil {
		// The Events are read as this ServiceAccount: naming it is acting
		// as it, so the setter needs the right a run's would need.
		ok, err := authz.MayUseServiceAccount(ctx, w.Client, req.UserInfo, t.Namespace, ke.ServiceAccountName)
		if err != nil {
			return nil, kerrors.NewInternalError(err)
		}
		if !ok {
			return nil, invalid(agentTriggerGK, t.Name, field.ErrorList{field.Forbidden(
				field.NewPath("spec", "source", "kubernetesEvents", "serviceAccountName"),
				fmt.Sprintf("%q may not use ServiceAccount %s/%s, which the trigger reads Events as: grant them the verb use (or impersonate) on serviceaccounts/%s",
					req.UserInfo.Username, t.Namespace, ke.ServiceAccountName, ke.ServiceAccountName))})
		}
	}
	return nil, nil
}

// ValidateAgentTrigger checks what the CRD schema cannot: the CEL
// expressions compile (as the listener will compile them), the dedup
// window is sensible, the Events selectors are names, and the run
// template is an AgentRun's spec — each error naming the trigger's field.
func ValidateAgentTrigger(t *exagentv1.AgentTrigger) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if _, err := trigger.Compile(t.Spec.Input); err != nil {
		errs = append(errs, field.Invalid(spec.Child("input"), t.Spec.Input, err.Error()))
	}
	if t.Spec.DedupKey != "" {
		if _, err := trigger.Compile(t.Spec.DedupKey); err != nil {
			errs = append(errs, field.Invalid(spec.Child("dedupKey"), t.Spec.DedupKey, err.Error()))
		}
	}
	if d := t.Spec.DedupWindow; d != nil && (d.Duration < minDedupWindow || d.Duration > maxDedupWindow) {
		errs = append(errs, field.Invalid(spec.Child("dedupWindow"), d.Duration.String(),
			fmt.Sprintf("must be between %s and %s", minDedupWindow, maxDedupWindow)))
	}
	if src := t.Spec.Source; src != nil && src.KubernetesEvents != nil {
		errs = append(errs, validateEventsSource(src.KubernetesEvents, spec.Child("source", "kubernetesEvents"))...)
	}
	run := &exagentv1.AgentRun{
		ObjectMeta: metav1.ObjectMeta{Namespace: t.Namespace, Name: "trigger-run"},
		Spec:       t.Spec.RunTemplate.RunSpec(nil),
	}
	for _, e := range ValidateAgentRun(run, nil) {
		if !strings.HasPrefix(e.Field, "spec.") {
			continue
		}
		e.Field = strings.Replace(e.Field, "spec.", "spec.runTemplate.", 1)
		errs = append(errs, e)
	}
	return errs
}

// validateEventsSource checks the names a kubernetesEvents source selects by.
func validateEventsSource(ke *exagentv1.KubernetesEventsTriggerSource, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(ke.ServiceAccountName) {
		errs = append(errs, field.Invalid(path.Child("serviceAccountName"), ke.ServiceAccountName, msg))
	}
	if io := ke.InvolvedObject; io != nil {
		for i, ns := range io.Namespaces {
			for _, msg := range validation.IsDNS1123Label(ns) {
				errs = append(errs, field.Invalid(path.Child("involvedObject", "namespaces").Index(i), ns, msg))
			}
		}
		for i, k := range io.Kinds {
			if !isKindName(k) {
				errs = append(errs, field.Invalid(path.Child("involvedObject", "kinds").Index(i), k, "a kind is a letter followed by letters and digits, e.g. Pod"))
			}
		}
	}
	return errs
}

// isKindName reports whether k looks like a Kubernetes kind (Pod, HorizontalPodAutoscaler).
func isKindName(k string) bool {
	if k == "" {
		return false
	}
	for i, r := range k {
		letter := (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
		if !letter && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}

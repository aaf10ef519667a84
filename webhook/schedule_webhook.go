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
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/authz"
	"github.com/exagent-io/exagent/internal/schedule"
	"github.com/exagent-io/exagent/internal/served"
)

// The mutating webhook runs at every CREATE and UPDATE (metadata-only ones
// included): it alone writes exagentv1.AnnotationSpecSetBy, so a client
// cannot name someone else as the person a schedule's runs act for. The
// validating one runs only when the spec changes (its checks read only
// spec and the person setting it).
// +kubebuilder:webhook:path=/mutate-exagent-io-v1alpha1-agentschedule,mutating=true,failurePolicy=fail,sideEffects=None,groups=exagent.io,resources=agentschedules,verbs=create;update,versions=v1beta1,name=magentschedule.exagent.io,admissionReviewVersions=v1,timeoutSeconds=10,reinvocationPolicy=Never
// +kubebuilder:webhook:path=/validate-exagent-io-v1alpha1-agentschedule,mutating=false,failurePolicy=fail,sideEffects=None,groups=exagent.io,resources=agentschedules,verbs=create;update,versions=v1beta1,name=vagentschedule.exagent.io,admissionReviewVersions=v1,timeoutSeconds=10,patch=`{"matchConditions":[{"name":"create-or-spec-changed","expression":"request.operation != 'UPDATE' || object.spec != oldObject.spec"}]}`

var agentScheduleGK = schema.GroupKind{Group: exagentv1.GroupVersion.Group, Kind: "AgentSchedule"}

// AgentScheduleWebhook records who set a schedule's spec and checks that
// they may: a schedule's runs are requested by that person (DESIGN §19),
// so setting one needs the right to create runs, and to use the
// ServiceAccount its runs act as, as creating a run does.
type AgentScheduleWebhook struct {
	// Signer, when set, seals the stamped setter with the spec
	// (authz.Signer.SignSchedule): the controller and the AgentRun webhook
	// then refuse a setter written past this webhook.
	Signer *authz.Signer
	// Client creates the SubjectAccessReviews; Reader reads the Agent
	// (its spec.serviceAccountNames) past the cache.
	Client client.Client
	Reader client.Reader
	// Namespaces are those the manager serves; a schedule elsewhere would
	// never tick, so it is refused.
	Namespaces served.Namespaces
}

var (
	_ admission.Defaulter[*exagentv1.AgentSchedule] = &AgentScheduleWebhook{}
	_ admission.Validator[*exagentv1.AgentSchedule] = &AgentScheduleWebhook{}
)

// Default stamps exagentv1.AnnotationSpecSetBy: the requesting user when
// the schedule is created or its spec changes, and otherwise the value it
// had (overwriting whatever the client wrote either way).
func (w *AgentScheduleWebhook) Default(ctx context.Context, sched *exagentv1.AgentSchedule) error {
	req, err := requester(ctx)
	if err != nil {
		return err
	}
	old := &exagentv1.AgentSchedule{}
	if !isCreate(req) {
		if err := json.Unmarshal(req.OldObject.Raw, old); err != nil {
			return kerrors.NewBadRequest(fmt.Sprintf("decoding the AgentSchedule as it was: %v", err))
		}
	}
	changed := isCreate(req) || !equality.Semantic.DeepEqual(old.Spec, sched.Spec)
	if !stampSpecSetter(req, &sched.Annotations, old.Annotations, changed) {
		return nil
	}
	if w.Signer != nil {
		// Last: the seal covers the spec as it will be stored.
		return w.Signer.SignSchedule(sched)
	}
	return nil
}

// ValidateCreate checks the schedule and that its creator may set it.
func (w *AgentScheduleWebhook) ValidateCreate(ctx context.Context, sched *exagentv1.AgentSchedule) (admission.Warnings, error) {
	return w.validate(ctx, sched)
}

// ValidateUpdate checks a changed spec as a new one: its runs will act
// for the person changing it.
func (w *AgentScheduleWebhook) ValidateUpdate(ctx context.Context, _, sched *exagentv1.AgentSchedule) (admission.Warnings, error) {
	return w.validate(ctx, sched)
}

// ValidateDelete allows deletes (the webhook is not registered for them).
func (w *AgentScheduleWebhook) ValidateDelete(context.Context, *exagentv1.AgentSchedule) (admission.Warnings, error) {
	return nil, nil
}

func (w *AgentScheduleWebhook) validate(ctx context.Context, sched *exagentv1.AgentSchedule) (admission.Warnings, error) {
	req, err := requester(ctx)
	if err != nil {
		return nil, err
	}
	if err := refuseUnserved(w.Namespaces, schema.GroupResource{Group: agentScheduleGK.Group, Resource: "agentschedules"}, sched.Name, req.Namespace); err != nil {
		return nil, err
	}
	errs := ValidateAgentSchedule(sched)
	if len(errs) > 0 {
		return nil, invalid(agentScheduleGK, sched.Name, errs)
	}
	return nil, authorizeSetter(ctx, w.Client, w.Reader, req, agentScheduleGK, sched.Name, sched.Namespace, &sched.Spec.RunTemplate, "schedule")
}

// authorizeSetter checks that the person setting a schedule's or
// trigger's spec may have its runs made for them: the right to create
// runs in the namespace, and to use the ServiceAccount the template's runs
// act as — the checks creating such a run would make (checkServiceAccount).
func authorizeSetter(ctx context.Context, c client.Client, reader client.Reader, req admission.Request, gk schema.GroupKind,
	name, namespace string, tmpl *exagentv1.ScheduleRunTemplate, what string) error {
	if c == nil || reader == nil {
		return kerrors.NewInternalError(fmt.Errorf("the %s webhook has no client to authorize its setter", gk.Kind))
	}
	ok, why, err := authz.MayCreateRuns(ctx, c, req.UserInfo, namespace)
	if err != nil {
		return kerrors.NewInternalError(err)
	}
	if !ok {
		msg := fmt.Sprintf("%q may not create AgentRuns in namespace %s, and a %s's runs are created for the person who sets it: "+
			"grant them the verb create on agentruns there (the exagent-editor ClusterRole does)", req.UserInfo.Username, namespace, what)
		if why != "" {
			msg += " (" + why + ")"
		}
		return invalid(gk, name, field.ErrorList{field.Forbidden(field.NewPath("spec", "runTemplate"), msg)})
	}
	run := &exagentv1.AgentRun{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       tmpl.RunSpec(nil),
	}
	runs := &AgentRunWebhook{Client: c, Reader: reader}
	ferr, err := runs.checkServiceAccount(ctx, req, run)
	if err != nil {
		return err
	}
	if ferr != nil {
		ferr.Field = strings.Replace(ferr.Field, "spec.", "spec.runTemplate.", 1)
		return invalid(gk, name, field.ErrorList{ferr})
	}
	return nil
}

// ValidateAgentSchedule checks what the CRD schema cannot: the cron
// expression, the time zone (loaded as the controller will), and the run
// template as an AgentRun's spec would be checked, with each error naming
// the schedule's field.
func ValidateAgentSchedule(sched *exagentv1.AgentSchedule) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if _, err := schedule.ParseCron(sched.Spec.Schedule); err != nil {
		errs = append(errs, field.Invalid(spec.Child("schedule"), sched.Spec.Schedule, err.Error()))
	}
	if _, err := schedule.ParseZone(sched.Spec.TimeZone); err != nil {
		errs = append(errs, field.Invalid(spec.Child("timeZone"), sched.Spec.TimeZone, err.Error()))
	}
	if len(sched.Name) > exagentv1.MaxScheduleNameLength {
		errs = append(errs, field.TooLong(field.NewPath("metadata", "name"), sched.Name, exagentv1.MaxScheduleNameLength))
	}
	run := &exagentv1.AgentRun{
		ObjectMeta: metav1.ObjectMeta{Namespace: sched.Namespace, Name: schedule.RunName(sched.Name, metav1.Now().Time)},
		Spec:       sched.Spec.RunTemplate.RunSpec(nil),
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

// managerScheduled reports whether run is one a schedule's tick made: the
// manager created it, labelled with its schedule (not a child, not a turn).
func (w *AgentRunWebhook) managerScheduled(run *exagentv1.AgentRun, creator exagentv1.Actor) bool {
	return w.Manager != "" && creator.Username == w.Manager && run.Labels[exagentv1.LabelSchedule] != "" &&
		run.Spec.Delegation == nil && run.Spec.ConversationRef == nil
}

// checkScheduled admits a run the manager created for a schedule only
// when the schedule exists, the run asks what its template asks for (the
// Agent and ServiceAccount its setter was authorized for), and its
// requestedBy is the schedule's stamped setter — as checkManagerTurn holds
// a RoundRobin turn to its conversation's first requester.
func (w *AgentRunWebhook) checkScheduled(ctx context.Context, run *exagentv1.AgentRun) (*field.Error, error) {
	name := run.Labels[exagentv1.LabelSchedule]
	path := field.NewPath("metadata", "labels").Key(exagentv1.LabelSchedule)
	sched := &exagentv1.AgentSchedule{}
	if err := w.Reader.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: name}, sched); err != nil {
		if kerrors.IsNotFound(err) {
			return field.NotFound(path, fmt.Sprintf("AgentSchedule %s: the exagent manager creates runs only for schedules that exist", name)), nil
		}
		return nil, kerrors.NewInternalError(fmt.Errorf("reading AgentSchedule %s/%s: %w", run.Namespace, name, err))
	}
	if w.Signer != nil {
		if err := w.Signer.VerifySchedule(sched); err != nil {
			return field.Forbidden(path, fmt.Sprintf("AgentSchedule %s: %v; apply its spec again", name, err)), nil
		}
	}
	var setter exagentv1.Actor
	if err := json.Unmarshal([]byte(sched.Annotations[exagentv1.AnnotationSpecSetBy]), &setter); err != nil || setter.Username == "" {
		return field.Forbidden(path, fmt.Sprintf("AgentSchedule %s has no %s stamped by admission: apply its spec again", name, exagentv1.AnnotationSpecSetBy)), nil
	}
	if run.Spec.RequestedBy == nil || !authz.SameActor(setter, *run.Spec.RequestedBy) {
		return field.Forbidden(field.NewPath("spec", "requestedBy"), fmt.Sprintf(
			"a scheduled run carries the person who last set AgentSchedule %s's spec (%q)", name, setter.Username)), nil
	}
	want := sched.Spec.RunTemplate.RunSpec(&setter)
	if run.Spec.AgentRef != want.AgentRef || run.Spec.ServiceAccountName != want.ServiceAccountName {
		return field.Forbidden(field.NewPath("spec"), fmt.Sprintf(
			"a scheduled run asks for what AgentSchedule %s's spec.runTemplate asks (agent %q, serviceAccountName %q)",
			name, want.AgentRef.Name, want.ServiceAccountName)), nil
	}
	if !slices.ContainsFunc(run.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == sched.UID }) {
		return field.Forbidden(field.NewPath("metadata", "ownerReferences"), fmt.Sprintf(
			"a scheduled run is owned by its AgentSchedule %s (uid %s)", name, sched.UID)), nil
	}
	return nil, nil
}

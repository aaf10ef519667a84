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

package loop

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/waitcond"
)

// Waits on cluster objects (builtin WaitFor, DESIGN §20). A call names an
// object (or a label selector) of one of the tool's kinds in the run's
// namespace, and a condition; beginning it journals wait {kind Object,
// object {…, serviceAccount}} and no IO. The engine never reads the
// cluster: the controller reads the object as the run's ServiceAccount
// (never as the manager) and hands what it saw to ObserveWait, which closes
// the call when the condition is met or the wait cannot go on (forbidden,
// kind unknown); the timeout closes it through Wake like a Sleep's timer.
//
// Only the run's namespace: a builtin Get acts there only (tools/builtin.go),
// and a tenant must not make the manager watch other namespaces for it — the
// ServiceAccount's RBAC would refuse most of them anyway, but the manager's
// watches are shared and capped per namespace, which only holds when a run
// watches its own.
//
// A named object that does not exist keeps the call waiting: it may be
// created (a Deployment the model just applied, a Job's output). Its
// deletion while waited on does too. Only the timeout ends such a wait.

// defaultWaitForParameters is the parameters schema of a WaitFor tool that
// declares none.
const defaultWaitForParameters = `{"type":"object","properties":{` +
	`"apiVersion":{"type":"string","minLength":1,"maxLength":253,"description":"apiVersion of the object: v1, apps/v1."},` +
	`"kind":{"type":"string","minLength":1,"maxLength":63,"description":"kind of the object: Deployment, ConfigMap."},` +
	`"namespace":{"type":"string","maxLength":63,"description":"namespace of the object; the run's, the only one allowed, when omitted."},` +
	`"name":{"type":"string","maxLength":253,"description":"name of the object; or labelSelector."},` +
	`"labelSelector":{"type":"string","maxLength":1024,"description":"label selector (app=web,tier!=db): every object it selects must meet the condition, and one at least must exist; or name."},` +
	`"condition":{"type":"string","minLength":1,"maxLength":4096,"description":"Type=Status of a status condition (Available=True), Current (kstatus: reconciled and ready), or a CEL expression over the object as self that yields a bool (self.status.readyReplicas == 3)."},` +
	`"timeout":{"type":"string","maxLength":64,"description":"longest wait, as a Go duration (90s, 10m, 1h30m); the longest the agent allows when omitted."}},` +
	`"required":["apiVersion","kind","condition"],"additionalProperties":false}`

// waitForArgs are a WaitFor call's arguments. Each is any, so that a wrong
// type is told as such rather than as a JSON decoding error.
type waitForArgs struct {
	APIVersion    any `json:"apiVersion"`
	Kind          any `json:"kind"`
	Namespace     any `json:"namespace"`
	Name          any `json:"name"`
	LabelSelector any `json:"labelSelector"`
	Condition     any `json:"condition"`
	Timeout       any `json:"timeout"`
}

// planObjectWait reads a WaitFor call's arguments: the object (or
// selector) and the condition, checked as far as can be without the
// cluster — the kind is one of the tool's and not a Secret, the selector
// and condition parse, the namespace is the run's. The controller resolves
// the kind against the cluster when it reads.
func (e *Env) planObjectWait(c *exagentv1.ToolCall) (waitPlan, error) {
	var p waitPlan
	var a waitForArgs
	if err := json.Unmarshal([]byte(c.Args), &a); err != nil {
		return p, fmt.Errorf("the arguments are not a JSON object with apiVersion, kind, name or labelSelector, and condition")
	}
	str := func(name string, v any, maxLen int) (string, error) {
		if v == nil {
			return "", nil
		}
		s, ok := v.(string)
		switch {
		case !ok:
			return "", fmt.Errorf("%s must be a string", name)
		case len(s) > maxLen:
			return "", fmt.Errorf("%s is %d bytes long: at most %d", name, len(s), maxLen)
		}
		return strings.TrimSpace(s), nil
	}
	o := exagentv1.WaitedObject{ServiceAccount: e.in.Run.ServiceAccount()}
	var err error
	if o.APIVersion, err = str("apiVersion", a.APIVersion, 253); err != nil {
		return p, err
	}
	if o.Kind, err = str("kind", a.Kind, 63); err != nil {
		return p, err
	}
	if o.Namespace, err = str("namespace", a.Namespace, 63); err != nil {
		return p, err
	}
	if o.Name, err = str("name", a.Name, 253); err != nil {
		return p, err
	}
	if o.LabelSelector, err = str("labelSelector", a.LabelSelector, 1024); err != nil {
		return p, err
	}
	if o.Condition, err = str("condition", a.Condition, waitcond.MaxLength); err != nil {
		return p, err
	}
	if err := e.checkWaitedKind(c.Tool, o.APIVersion, o.Kind); err != nil {
		return p, err
	}
	if err := e.checkWaitedNamespace(&o); err != nil {
		return p, err
	}
	if err := checkWaitedNames(o.Name, o.LabelSelector); err != nil {
		return p, err
	}
	if _, err := waitcond.Parse(o.Condition); err != nil {
		return p, err
	}
	text, d, given, err := waitTimeout(a.Timeout)
	if err != nil {
		return p, err
	}
	p.wait = exagentv1.CallWait{Duration: text, Object: &o}
	p.d, p.unbounded = d, !given
	return p, nil
}

// checkWaitedKind checks that apiVersion/kind is one of the tool's kinds
// (Kind or Kind.group, matched as the Get builtin matches them) and not a
// Secret: WaitFor never reads Secrets, whose data a CEL condition could
// leak into the result one bit at a time.
func (e *Env) checkWaitedKind(tool, apiVersion, kind string) error {
	if apiVersion == "" || kind == "" {
		return fmt.Errorf("apiVersion and kind are required (apps/v1 and Deployment, v1 and ConfigMap)")
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil || gv.Version == "" {
		return fmt.Errorf("apiVersion %q is not group/version or version (apps/v1, v1)", apiVersion)
	}
	if gv.Group == "" && strings.EqualFold(kind, "Secret") {
		return fmt.Errorf("WaitFor never waits on Secrets")
	}
	var kinds []string
	if t := e.tool(tool); t != nil && t.Builtin != nil {
		kinds = t.Builtin.Kinds
	}
	for _, k := range kinds {
		gk := schema.ParseGroupKind(k)
		if gk.Kind == kind && gk.Group == gv.Group {
			return nil
		}
	}
	return fmt.Errorf("kind %s of %s is not one this tool may wait on (%s)", kind, apiVersion, strings.Join(kinds, ", "))
}

// checkWaitedNamespace defaults the namespace to the run's and refuses any
// other (see the top of this file for why).
func (e *Env) checkWaitedNamespace(o *exagentv1.WaitedObject) error {
	ns := e.in.RunNamespace
	switch {
	case o.Namespace == "":
		o.Namespace = ns
	case ns != "" && o.Namespace != ns:
		return fmt.Errorf("namespace %q is not the run's namespace %q: WaitFor waits on objects of the run's namespace only", o.Namespace, ns)
	}
	return nil
}

// checkWaitedNames checks that exactly one of name and labelSelector is
// given, and that it is well formed.
func checkWaitedNames(name, selector string) error {
	switch {
	case name == "" && selector == "":
		return fmt.Errorf("name or labelSelector is required")
	case name != "" && selector != "":
		return fmt.Errorf("give name or labelSelector, not both")
	case name != "":
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			return fmt.Errorf("name %q is not an object name: %s", truncateUTF8(name, 64), strings.Join(errs, "; "))
		}
	default:
		if _, err := labels.Parse(selector); err != nil {
			return fmt.Errorf("labelSelector %q does not parse: %v", truncateUTF8(selector, 64), err)
		}
	}
	return nil
}

// WaitObservation is what the controller saw of a WaitFor call's object(s),
// read as the run's ServiceAccount.
type WaitObservation struct {
	// Met: the condition holds. Detail names what met it ("Deployment
	// ns/web", "3 Pods in ns with labels app=web").
	Met    bool
	Detail string
	// Problem is why the wait cannot go on (forbidden, kind unknown, too
	// many objects selected): the call fails with it at once, rather than
	// at its timeout. Empty with Met false: not yet, keep waiting.
	Problem string
}

// ObserveWait hands a Waiting run what the controller saw of the object(s)
// its call callID waits on: met, the call succeeds, its result saying
// "condition … met at … (…)"; a problem, it fails, the result saying why
// nothing more is waited for; once no call waits the run is Queued
// (Approved when a decision waits to be acted on) with reason Woken, as
// Wake leaves it. changed is false when the observation closes nothing
// (not yet met, the call no longer waits on an object, the run is not
// Waiting). At or past the deadline it changes nothing: the caller applies
// Expire first.
//
// Touches: the call (state, outcome), phase, reason, message.
// Guard: phase Waiting; the call waits on an object.
func ObserveWait(s Status, env *Env, callID string, obs WaitObservation, now time.Time) (Status, bool, error) {
	if s.Phase != exagentv1.PhaseWaiting || (!obs.Met && obs.Problem == "") {
		return s, false, nil
	}
	if d := env.deadline(); d != nil && !now.Before(*d) {
		return s, false, nil // Expire's
	}
	st := clone(s)
	var c *exagentv1.ToolCall
	for i := range st.Calls {
		if st.Calls[i].ID == callID {
			c = &st.Calls[i]
		}
	}
	if c == nil || !waiting(c) || c.Wait.Kind != exagentv1.WaitObject || c.Wait.Object == nil {
		return s, false, nil
	}
	at := now.UTC().Format(time.RFC3339)
	if obs.Met {
		c.State = exagentv1.CallSucceeded
		c.Outcome = &exagentv1.CallOutcome{Succeeded: true, At: microTimePtr(now), Result: bound(fmt.Sprintf(
			"condition %s met at %s (%s)", c.Wait.Object.Condition, at, obs.Detail), maxContent)}
	} else {
		c.State = exagentv1.CallFailed
		c.Outcome = &exagentv1.CallOutcome{At: microTimePtr(now), Result: bound(fmt.Sprintf(
			"stopped waiting at %s for %s: %s", at, c.Wait.Object.Target(), obs.Problem), maxContent)}
	}
	afterWake(&st, now)
	return st, true, nil
}

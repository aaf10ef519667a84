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

package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/segment"
	"github.com/exagent-io/exagent/loop"
	"github.com/exagent-io/exagent/store"
)

// Delegation's IO (docs/architecture.md §5, §14; the decisions are loop/delegate.go's,
// loop/reserve.go's and loop/withdraw.go's): creating a delegation call's
// child after its intent's commit, reading a waiting parent's children,
// ending the children a run withdrew or left by ending (found by the names
// its intents journaled, and by label and owner UID), reading a child's
// parent before the child is claimed, and deleting the children of a
// deleted run. There is no garbage collector in every cluster this runs
// against (envtest, the dev cluster), so the manager deletes a deleted
// run's children itself; ownerReferences are set for the clusters that
// have one.

// childCreateTimeout bounds a child's Create once it is sent: the request
// is not called back when the parent's claim is lost meanwhile (it may
// land anyway), so the job learns whether the child exists.
const childCreateTimeout = 30 * time.Second

// parentWaitRetry is how soon a child that waits for its parent looks
// again if no change of the parent woke it first.
const parentWaitRetry = 30 * time.Second

// delegated is the result of a delegation call's effect: the child exists,
// or it could not be created (refusal, a failed outcome the model sees).
type delegated struct {
	callID  string
	child   loop.ChildRef
	refusal string
}

// childCreateTries bounds how often one job retries a transient failure
// to create a child before it hands the intent back (it is begun again).
const childCreateTries = 5

// dispatchDelegation runs a delegation call's effect: create the child the
// engine planned, or find it when it exists already (same parent UID and
// call: a crash between the creation and the parent's commit). A run of
// that name that is not this call's child is never adopted.
func (r *AgentRunReconciler) dispatchDelegation(sc *scope, inv loop.ToolInvocation) {
	key := sc.key
	parent := sc.run
	plan, refusal, planErr := loop.PlanChild(sc.status, sc.env, inv.CallID, sc.now)
	r.submit(sc, "delegation", inv.CallID, func(ctx context.Context) ioResult {
		res := &delegated{callID: inv.CallID, refusal: refusal}
		switch {
		case planErr != nil:
			res.refusal = fmt.Sprintf("the child run could not be planned: %v", planErr)
		case refusal == "":
			child, msg, err := r.createChild(ctx, parent, plan, inv.CallID)
			if err != nil {
				logf.FromContext(ctx).Info("could not create a child run; the call is begun again", "child", plan.Name, "error", err.Error())
				return ioResult{notStarted: &notStarted{callID: inv.CallID, cause: err}}
			}
			res.child, res.refusal = child, msg
			if msg == "" {
				r.Hooks.afterChildCreated(ctx, key, child.Name)
			}
		}
		return ioResult{delegated: res}
	})
}

// createChild creates plan as parent's child, or finds it. A refusal
// (message) is permanent for this call; an error is transient.
func (r *AgentRunReconciler) createChild(ctx context.Context, parent *exagentv1.AgentRun, plan loop.ChildPlan,
	callID string) (loop.ChildRef, string, error) {
	child := &exagentv1.AgentRun{
		ObjectMeta: metav1.ObjectMeta{
			Name: plan.Name, Namespace: parent.Namespace, Labels: withShardOf(parent, plan.Labels),
			// Deleted with its parent by the garbage collector: deleting a
			// root deletes its tree.
			OwnerReferences: []metav1.OwnerReference{exagentv1.RunControllerReference(parent, true)},
		},
		Spec: plan.Spec,
	}
	if refusal, err := r.childServiceAccountRefusal(ctx, parent.Namespace, plan.Spec); refusal != "" || err != nil {
		return loop.ChildRef{}, refusal, err
	}
	var last error
	for try := range childCreateTries {
		if try > 0 {
			select {
			case <-ctx.Done():
				return loop.ChildRef{}, "", ctx.Err()
			case <-time.After(wait.Jitter(200*time.Millisecond, 1)):
			}
		}
		if err := ctx.Err(); err != nil {
			return loop.ChildRef{}, "", err // the claim was lost before anything was sent
		}
		r.Hooks.beforeChildCreate(ctx, types.NamespacedName{Namespace: parent.Namespace, Name: parent.Name}, plan.Name)
		// Once sent, a Create may land even if the claim is lost meanwhile:
		// it is not called back, and the parent journaled the child's name
		// before it, so a child that lands for a parent that no longer
		// awaits it is ended (by the parent, and by itself at its claim).
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), childCreateTimeout)
		err := r.Client.Create(cctx, child.DeepCopy())
		cancel()
		if err == nil || apierrors.IsAlreadyExists(err) {
			return r.findChild(ctx, parent, plan, callID)
		}
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err) {
			return loop.ChildRef{}, fmt.Sprintf("the child run %s could not be created: %v", plan.Name, err), nil
		}
		last = err
	}
	return loop.ChildRef{}, "", fmt.Errorf("creating child run %s: %w", plan.Name, last)
}

// childServiceAccountRefusal says why a child of spec may not be created
// ("" when it may): it inherits its parent's ServiceAccount, and its
// builtin tools would act as it, so the child's Agent must allow it as it
// must for a root run (authority only narrows: a parent cannot lend an
// Agent an identity its author never vouched for). Read past the cache,
// so an Agent edited a moment ago is what decides. A missing Agent is
// not this check's to refuse: the child fails on it by itself. The
// child's builtin tools ask again before they act (dispatchTool), for an
// Agent edited once the child exists.
func (r *AgentRunReconciler) childServiceAccountRefusal(ctx context.Context, namespace string, spec exagentv1.AgentRunSpec) (string, error) {
	sa := spec.ServiceAccount()
	agent := &exagentv1.Agent{}
	switch err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: spec.AgentRef.Name}, agent); {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("reading Agent %s/%s to check the child's ServiceAccount: %w", namespace, spec.AgentRef.Name, err)
	case agent.Spec.AllowsInheritedServiceAccount(sa):
		return "", nil
	}
	return inheritedServiceAccountRefusal(namespace, sa, spec.AgentRef.Name) + " The child run was not created.", nil
}

// inheritedServiceAccountRefusal is what a delegation call (or a child's
// builtin call) that may not act as sa tells the model and the journal.
func inheritedServiceAccountRefusal(namespace, sa, agent string) string {
	return fmt.Sprintf("%s: a child run acts as its parent's ServiceAccount %s/%s, which Agent %q does not allow: "+
		"add %q to Agent %q's spec.serviceAccountNames (whoever adds it needs the verb \"use\" on it), "+
		"or run the parent as a ServiceAccount that Agent allows.",
		exagentv1.ReasonServiceAccountNotAllowed, namespace, sa, agent, sa, agent)
}

// findChild reads the child past the cache and checks it is this call's.
func (r *AgentRunReconciler) findChild(ctx context.Context, parent *exagentv1.AgentRun, plan loop.ChildPlan,
	callID string) (loop.ChildRef, string, error) {
	got := &exagentv1.AgentRun{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: parent.Namespace, Name: plan.Name}, got); err != nil {
		return loop.ChildRef{}, "", fmt.Errorf("reading child run %s: %w", plan.Name, err)
	}
	if d := got.Spec.Delegation; d == nil || d.Parent.UID != string(parent.UID) || d.CallID != callID {
		return loop.ChildRef{}, fmt.Sprintf("%s: a run named %s already exists and is not the child of call %s of this run "+
			"(it is never adopted): delete or rename it, or let the model try again", exagentv1.ReasonChildNameTaken, plan.Name, callID), nil
	}
	return loop.ChildRef{Name: got.Name, UID: string(got.UID), Agent: got.Spec.AgentRef.Name}, "", nil
}

// recordDelegated applies a delegation job's result.
func (r *AgentRunReconciler) recordDelegated(sc *scope, res *delegated) (loop.Status, error) {
	if res.refusal != "" {
		return loop.ChildRefused(sc.status, sc.env, *sc.fence, res.callID, res.refusal, sc.now)
	}
	next, err := loop.RecordDelegated(sc.status, sc.env, *sc.fence, res.callID, res.child, sc.now)
	if err == nil {
		sc.note(exagentv1.EventChildStarted, normal, "child run %s (agent %s) started for call %s", res.child.Name, res.child.Agent, res.callID)
	}
	return next, err
}

// observeChildren folds the children's state into a run that waits for
// them (no claim, delegation calls open): their ends become the calls'
// outcomes, their usage is charged once, and the phase mirrors them. Any
// run — owned or not — that withdrew children (loop.Withdrawing: a call
// closed or asked again before its child was recorded, its tool removed)
// ends them and, once they ended, is charged their usage. A run that still
// waits for a withdrawn child is not claimed: it goes on once the child
// ended (the child's end wakes it).
func (r *AgentRunReconciler) observeChildren(ctx context.Context, sc *scope) error {
	awaiting := sc.fence == nil && loop.AwaitingChildren(sc.status)
	if !awaiting && !loop.Withdrawing(sc.status, sc.env) {
		return nil
	}
	obs, err := r.readChildren(ctx, sc.run, sc.status)
	if err != nil {
		return err
	}
	var next loop.Status
	var events []loop.ChildEvent
	if awaiting {
		if next, events, err = loop.ObserveChildren(sc.status, sc.env, obs, sc.now); err != nil {
			return r.failPermanent(sc, err)
		}
	} else {
		next, events = loop.WithdrawChildren(sc.status, sc.env, obs)
	}
	if !equalStatus(next, sc.status) {
		sc.set(next)
	}
	for _, e := range events {
		switch e.Kind {
		case loop.ChildPaused:
			sc.note(exagentv1.EventChildPaused, normal, "%s", e.Message)
		case loop.ChildEnded:
			sc.note(exagentv1.EventChildEnded, normal, "%s", e.Message)
			sc.childEnded = true
		case loop.ChildWithdrawn:
			if err := r.endChild(ctx, sc.run, e); err != nil {
				return err
			}
			sc.note(exagentv1.EventChildWithdrawn, normal, "child run %s: %s", e.Child, e.Message)
		}
	}
	if sc.fence == nil && loop.Withdrawing(sc.status, sc.env) {
		sc.stop = true // not claimed while a withdrawn child is still to end
	}
	return nil
}

// readChildren reads the children a run's status names — of its delegated
// calls and its withdrawn entries — from the cache (by the parent label),
// and past it for one the cache does not show (just created). A run of a
// child's name whose spec.delegation does not name this run and call is
// Foreign: never taken for the child.
func (r *AgentRunReconciler) readChildren(ctx context.Context, parent *exagentv1.AgentRun, st loop.Status) (map[string]loop.ChildObservation, error) {
	want := map[string]string{} // child name → call id
	for i := range st.Calls {
		if c := &st.Calls[i]; c.State == exagentv1.CallStarted && c.Child != "" {
			want[c.Child] = c.ID
		}
	}
	for _, e := range st.Children {
		if !e.Charged {
			want[e.Name] = e.CallID
		}
	}
	obs := map[string]loop.ChildObservation{}
	if len(want) == 0 {
		return obs, nil
	}
	children, err := r.childrenOf(ctx, parent.Namespace, parent.Name, "")
	if err != nil {
		return nil, err
	}
	byName := map[string]*exagentv1.AgentRun{}
	for i := range children {
		byName[children[i].Name] = &children[i]
	}
	for name, callID := range want {
		child := byName[name]
		if child == nil {
			child = &exagentv1.AgentRun{}
			err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: parent.Namespace, Name: name}, child)
			if apierrors.IsNotFound(err) {
				obs[name] = loop.ChildObservation{Missing: true}
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("reading child run %s of %s/%s: %w", name, parent.Namespace, parent.Name, err)
			}
		}
		if d := child.Spec.Delegation; d == nil || d.Parent.UID != string(parent.UID) || d.CallID != callID {
			obs[name] = loop.ChildObservation{UID: string(child.UID), Foreign: true}
			continue
		}
		st := child.Status.DeepCopy()
		if err := r.wholeOutput(ctx, child, st); err != nil {
			return nil, err
		}
		obs[name] = loop.ChildObservation{UID: string(child.UID), Status: st}
	}
	return obs, nil
}

// wholeOutput puts a child's whole final answer in st.output when it was
// sealed into the child's segments (status.output then holds only its
// beginning): the parent's model sees what the child answered. A chain
// that does not hold leaves the beginning, marked, rather than block the
// parent.
func (r *AgentRunReconciler) wholeOutput(ctx context.Context, child *exagentv1.AgentRun, st *exagentv1.AgentRunStatus) error {
	if st.Phase != exagentv1.PhaseSucceeded || st.OutputRef == nil || r.Segments == nil {
		return nil
	}
	chain, err := r.Segments.Chain(ctx, child)
	if err == nil {
		var v string
		if v, err = segment.ValuesOf(chain).Resolve(st.OutputRef); err == nil {
			st.Output = v
			return nil
		}
	}
	if !loop.IsPermanent(err) {
		return fmt.Errorf("reading the output of child run %s: %w", child.Name, err)
	}
	st.Output += " …[the rest of the child's answer cannot be read: " + err.Error() + "]"
	return nil
}

// endChildren ends the children of an ended run and charges their usage:
// cancelling a parent cancels its descendants (each child's own turn ends
// its children in turn), and what they used is the tree's. Every child the
// run's intents journaled and that is not settled is ended (ParentEnded)
// — whether or not the parent recorded it — and so is any other run that
// names the parent by label and owner UID (one an older version created
// without journaling it). Once a child ended, and its own children are
// settled, its usage is charged to the ended run in one write made on the
// run read past the cache (the cache strips ended runs' journals). An
// ended run whose children are all settled costs nothing.
func (r *AgentRunReconciler) endChildren(ctx context.Context, parent *exagentv1.AgentRun) error {
	if !loop.Withdrawing(parent.Status, nil) && !loop.UnjournaledChild(parent.Status) {
		return nil
	}
	env, err := r.envConfig().env(parent, nil, envExtras{})
	if err != nil {
		return nil // a malformed run spec: nothing can be evaluated
	}
	obs, err := r.readChildren(ctx, parent, parent.Status)
	if err != nil {
		return err
	}
	next, events := loop.WithdrawChildren(parent.Status, env, obs)
	var errs []error
	for _, e := range events {
		if e.Kind == loop.ChildWithdrawn {
			errs = append(errs, r.endChild(ctx, parent, e))
		}
	}
	errs = append(errs, r.endUnjournaled(ctx, parent))
	if settled(next) > settled(parent.Status) {
		errs = append(errs, r.chargeEnded(ctx, parent, env, obs))
	}
	return errors.Join(errs...)
}

// settled counts the settled entries of status.children.
func settled(s loop.Status) int {
	n := 0
	for _, e := range s.Children {
		if e.Charged {
			n++
		}
	}
	return n
}

// chargeEnded writes what the ended run's ended children used into it,
// computed again on the run read past the cache and committed by CAS on
// that version (a conflict is retried by the next turn).
func (r *AgentRunReconciler) chargeEnded(ctx context.Context, cached *exagentv1.AgentRun, env *loop.Env,
	obs map[string]loop.ChildObservation) error {
	run := &exagentv1.AgentRun{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(cached), run); err != nil {
		return fmt.Errorf("reading ended run %s to charge its children: %w", cached.Name, err)
	}
	if run.UID != cached.UID || !run.Status.Phase.IsTerminal() {
		return nil
	}
	next, _ := loop.WithdrawChildren(run.Status, env, obs)
	if settled(next) == settled(run.Status) {
		return nil
	}
	if _, err := r.Store.Commit(ctx, store.Write{Run: run, Status: next, Now: r.Clock.Now(), Steps: r.Steps.All(r.Steps.AgentSinks(ctx, run))}); err != nil {
		return fmt.Errorf("charging the children of ended run %s: %w", run.Name, err)
	}
	logf.FromContext(ctx).Info("charged the usage of the children of an ended run", "run", run.Name,
		"settled", settled(next)-settled(run.Status))
	return nil
}

// endUnjournaled ends the children of an ended run that its status does
// not name (created by a version that journaled no child name before the
// Create): found by the parent label and the parent's UID.
func (r *AgentRunReconciler) endUnjournaled(ctx context.Context, parent *exagentv1.AgentRun) error {
	children, err := r.childrenOf(ctx, parent.Namespace, parent.Name, parent.UID)
	if err != nil {
		return err
	}
	known := map[string]bool{}
	for _, e := range parent.Status.Children {
		known[e.Name] = true
	}
	var errs []error
	for i := range children {
		ch := &children[i]
		if known[ch.Name] || ch.Status.Phase.IsTerminal() {
			continue
		}
		errs = append(errs, r.endChild(ctx, parent, loop.ChildEvent{Kind: loop.ChildWithdrawn, Child: ch.Name,
			Reason: exagentv1.ReasonParentEnded, Message: loop.ParentEndedMessage(parent.Name, parent.Status.Phase)}))
	}
	return errors.Join(errs...)
}

// endChild cancels the child run e names (EndByParent) if it is still this
// parent's child and has not ended: one unfenced CAS write on the child
// read past the cache, retried on a conflict with the child's own owner.
func (r *AgentRunReconciler) endChild(ctx context.Context, parent *exagentv1.AgentRun, e loop.ChildEvent) error {
	key := types.NamespacedName{Namespace: parent.Namespace, Name: e.Child}
	var last error
	for range childEndTries {
		child := &exagentv1.AgentRun{}
		if err := r.APIReader.Get(ctx, key, child); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("reading child run %s of run %s: %w", e.Child, parent.Name, err)
		}
		if d := child.Spec.Delegation; d == nil || d.Parent.UID != string(parent.UID) || child.Status.Phase.IsTerminal() {
			return nil // not this parent's child, or ended already
		}
		env, err := r.envConfig().env(child, nil, envExtras{})
		if err != nil {
			return nil // a malformed run spec: nothing can be evaluated
		}
		now := r.Clock.Now()
		next, err := loop.EndByParent(child.Status, env, e.Reason, e.Message, now)
		if err != nil {
			return nil
		}
		written, err := r.Store.Commit(ctx, store.Write{Run: child, Status: next, Now: now, Steps: r.Steps.All(r.Steps.AgentSinks(ctx, child))})
		if errors.Is(err, store.ErrConflict) {
			last = err
			continue
		}
		if err != nil {
			return fmt.Errorf("cancelling child run %s of run %s: %w", e.Child, parent.Name, err)
		}
		if r.Recorder != nil {
			r.Recorder.Eventf(written, parent, warning, exagentv1.EventRunFailed, exagentv1.EventRunFailed, "%s", next.Message)
		}
		logf.FromContext(ctx).Info("cancelled a child run its parent no longer awaits", "child", e.Child, "reason", e.Reason)
		return nil
	}
	return fmt.Errorf("cancelling child run %s of run %s: %w", e.Child, parent.Name, last)
}

// childEndTries bounds how often endChild retries a conflict with the
// child's own writes before it leaves the rest to the next turn.
const childEndTries = 5

// checkParent is a child run's look at its parent before it is claimed,
// read past the cache so that a parent's end or withdrawal just written is
// seen: a child its parent no longer awaits (ended, gone, withdrew its
// call) ends itself before any IO; one whose parent's call is to be begun
// again waits, unclaimed, until the parent awaits it (a change of the
// parent wakes it, parentOfRun).
func (r *AgentRunReconciler) checkParent(ctx context.Context, sc *scope) error {
	d := sc.run.Spec.Delegation
	if d == nil || sc.fence != nil || !startable(sc.status.Phase) || sc.env == nil {
		return nil
	}
	parent := &exagentv1.AgentRun{}
	var view loop.ParentView
	switch err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: sc.key.Namespace, Name: d.Parent.Name}, parent); {
	case apierrors.IsNotFound(err):
		view.Missing = true
	case err != nil:
		return fmt.Errorf("reading the parent run %s of %s: %w", d.Parent.Name, sc.key, err)
	default:
		view = loop.ParentView{UID: string(parent.UID), Status: &parent.Status}
	}
	v := loop.CheckParent(sc.run.Name, d, view)
	switch v.Kind {
	case loop.ParentWithdrew:
		next, err := loop.EndByParent(sc.status, sc.env, v.Reason, v.Message, sc.now)
		if err != nil {
			return nil
		}
		sc.set(next)
		sc.noteEnd(next)
		sc.stop = true
	case loop.ParentResumes:
		if next, changed := loop.WaitForParent(sc.status, v.Message); changed {
			sc.set(next)
		}
		sc.requeueAfter = parentWaitRetry
		sc.stop = true
	}
	return nil
}

// childLimits reads, from the cache, the limits of the Agents the
// Agent's delegation tools hand work to — only when the run may begin
// calls in this turn (it is at a batch, or a model answer that may open
// one is awaited), the moment a child's reservation is made.
func (r *AgentRunReconciler) childLimits(ctx context.Context, sc *scope) map[string]exagentv1.LimitsSpec {
	if sc.agent == nil || sc.status.Cursor.Stage != exagentv1.StageBatch && sc.status.Cursor.ModelRequest == nil {
		return nil
	}
	agents := map[string]bool{}
	for i := range sc.agent.Spec.Tools {
		if t := &sc.agent.Spec.Tools[i]; t.Agent != nil {
			agents[t.Agent.AgentRef.Name] = true
		}
	}
	if len(agents) == 0 {
		return nil
	}
	out := map[string]exagentv1.LimitsSpec{}
	for name := range agents {
		a := &exagentv1.Agent{}
		if err := r.Client.Get(ctx, types.NamespacedName{Namespace: sc.key.Namespace, Name: name}, a); err == nil {
			out[name] = a.Spec.Limits
		}
	}
	return out
}

// childrenOf lists the runs whose spec names parent (by name, and by UID
// when uid is set) from the cache.
func (r *AgentRunReconciler) childrenOf(ctx context.Context, namespace, parent string, uid types.UID) ([]exagentv1.AgentRun, error) {
	var list exagentv1.AgentRunList
	if err := r.Client.List(ctx, &list, client.InNamespace(namespace),
		client.MatchingLabels{exagentv1.LabelParentRun: exagentv1.LabelValue(parent)}); err != nil {
		return nil, fmt.Errorf("listing the children of run %s/%s: %w", namespace, parent, err)
	}
	var out []exagentv1.AgentRun
	for _, ch := range list.Items {
		d := ch.Spec.Delegation
		if d == nil || d.Parent.Name != parent || (uid != "" && d.Parent.UID != string(uid)) {
			continue
		}
		out = append(out, ch)
	}
	return out, nil
}

// parentOfRun wakes a child's parent when the child changes: its mirror
// and, at the child's end, the call's outcome follow. It also wakes, when
// a parent changes, the children it journaled but has not recorded (and,
// once it ended, every child not settled): a child waiting for its parent
// (or one that must end itself) looks again.
func parentOfRun(_ context.Context, o client.Object) []reconcile.Request {
	run, ok := o.(*exagentv1.AgentRun)
	if !ok {
		return nil
	}
	var out []reconcile.Request
	if d := run.Spec.Delegation; d != nil {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: run.Namespace, Name: d.Parent.Name}})
	}
	ended := run.Status.Phase.IsTerminal()
	for _, e := range run.Status.Children {
		if !e.Charged && (e.UID == "" || ended) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: run.Namespace, Name: e.Name}})
		}
	}
	return out
}

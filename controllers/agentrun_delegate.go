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
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
	"github.com/exagent-io/exagent/loop"
)

// Delegation's IO (DESIGN.md §5; the decisions are loop/delegate.go's):
// creating a delegation call's child after its intent's commit, reading a
// waiting parent's children, cancelling the children of an ended run and
// deleting those of a deleted one. There is no garbage collector in every
// cluster this runs against (envtest, the dev cluster), so the manager
// deletes a deleted run's children itself; ownerReferences are set for
// the clusters that have one.

// Event reasons of a parent about its children.
const (
	eventChildStarted = "ChildStarted"
	eventChildPaused  = "ChildPaused"
	eventChildEnded   = "ChildEnded"
)

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
			Name: plan.Name, Namespace: parent.Namespace, Labels: plan.Labels,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: exagentv1.GroupVersion.String(), Kind: "AgentRun", Name: parent.Name, UID: parent.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: plan.Spec,
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
		err := r.Client.Create(ctx, child.DeepCopy())
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
		sc.note(eventChildStarted, normal, "child run %s (agent %s) started for call %s", res.child.Name, res.child.Agent, res.callID)
	}
	return next, err
}

// observeChildren folds the children's state into a run that waits for
// them (no claim, delegation calls open): their ends become the calls'
// outcomes, their usage is charged once, and the phase mirrors them.
func (r *AgentRunReconciler) observeChildren(ctx context.Context, sc *scope) error {
	if sc.fence != nil || !loop.AwaitingChildren(sc.status) {
		return nil
	}
	obs, err := r.readChildren(ctx, sc)
	if err != nil {
		return err
	}
	next, events, err := loop.ObserveChildren(sc.status, sc.env, obs, sc.now)
	if err != nil {
		return r.failPermanent(sc, err)
	}
	if !equalStatus(next, sc.status) {
		sc.set(next)
	}
	for _, e := range events {
		switch e.Kind {
		case loop.ChildPaused:
			sc.note(eventChildPaused, normal, "%s", e.Message)
		case loop.ChildEnded:
			sc.note(eventChildEnded, normal, "%s", e.Message)
			sc.childEnded = true
		}
	}
	return nil
}

// readChildren reads the children of the run's open delegation calls: from
// the cache, and past it for one the cache does not show (just created).
func (r *AgentRunReconciler) readChildren(ctx context.Context, sc *scope) (map[string]loop.ChildObservation, error) {
	var list exagentv1.AgentRunList
	if err := r.Client.List(ctx, &list, client.InNamespace(sc.key.Namespace),
		client.MatchingLabels{exagentv1.LabelParentRun: loop.LabelValue(sc.key.Name)}); err != nil {
		return nil, fmt.Errorf("listing the children of run %s: %w", sc.key, err)
	}
	byName := map[string]*exagentv1.AgentRun{}
	for i := range list.Items {
		byName[list.Items[i].Name] = &list.Items[i]
	}
	obs := map[string]loop.ChildObservation{}
	for i := range sc.status.Calls {
		c := &sc.status.Calls[i]
		if c.State != exagentv1.CallStarted || c.Child == "" {
			continue
		}
		child := byName[c.Child]
		if child == nil {
			child = &exagentv1.AgentRun{}
			err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: sc.key.Namespace, Name: c.Child}, child)
			if apierrors.IsNotFound(err) {
				obs[c.Child] = loop.ChildObservation{Missing: true}
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("reading child run %s of %s: %w", c.Child, sc.key, err)
			}
		}
		st := child.Status.DeepCopy()
		if err := r.wholeOutput(ctx, child, st); err != nil {
			return nil, err
		}
		obs[c.Child] = loop.ChildObservation{UID: string(child.UID), Status: st}
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
		if v, err = loop.ValuesOf(chain).Resolve(st.OutputRef); err == nil {
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

// endChildren cancels the children of an ended run that have not ended:
// cancelling a parent cancels its descendants (each child's own turn
// cancels its children in turn). The parent's mirror says whether any
// child may still be going on, so an ended run costs no List otherwise.
func (r *AgentRunReconciler) endChildren(ctx context.Context, parent *exagentv1.AgentRun) error {
	open := false
	for _, ch := range parent.Status.Children {
		if !ch.Phase.IsTerminal() {
			open = true
		}
	}
	if !open {
		return nil
	}
	children, err := r.childrenOf(ctx, parent.Namespace, parent.Name, parent.UID)
	if err != nil {
		return err
	}
	var errs []error
	for i := range children {
		child := r.Store.Fresher(&children[i])
		if child.Status.Phase.IsTerminal() {
			continue
		}
		if isSummary(child) {
			// A waiting child is cached as a summary, never written from:
			// the cancel is computed on the child read past the cache.
			fresh := &exagentv1.AgentRun{}
			if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(child), fresh); err != nil {
				errs = append(errs, fmt.Errorf("reading child run %s of ended run %s: %w", child.Name, parent.Name, err))
				continue
			}
			child = fresh
		}
		env, err := loop.NewEnv(loop.EnvInput{RunUID: string(child.UID), RunName: child.Name,
			Agent: &exagentv1.AgentSpec{}, Run: &child.Spec})
		if err != nil {
			continue // a malformed run spec: nothing can be evaluated
		}
		now := r.Clock.Now()
		next, err := loop.EndByParent(child.Status, env, parent.Name, parent.Status.Phase, now)
		if err != nil {
			continue
		}
		written, err := r.Store.Commit(ctx, child, next, nil, now)
		if err != nil {
			errs = append(errs, fmt.Errorf("cancelling child run %s of ended run %s: %w", child.Name, parent.Name, err))
			continue
		}
		if r.Recorder != nil {
			r.Recorder.Eventf(written, parent, warning, eventRunFailed, eventRunFailed, "%s", next.Message)
		}
		logf.FromContext(ctx).Info("cancelled a child run whose parent ended", "child", child.Name, "parentPhase", parent.Status.Phase)
	}
	return errors.Join(errs...)
}

// deleteChildren deletes the children of a run that is gone (uid: the
// deleted run's, or "" when unknown): deleting a parent deletes the tree.
func (r *AgentRunReconciler) deleteChildren(ctx context.Context, key types.NamespacedName, uid types.UID) error {
	children, err := r.childrenOf(ctx, key.Namespace, key.Name, uid)
	if err != nil {
		return err
	}
	var errs []error
	for i := range children {
		ch := &children[i]
		err := r.Client.Delete(ctx, ch, client.Preconditions{UID: &ch.UID}, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("deleting child run %s of deleted run %s: %w", ch.Name, key, err))
			continue
		}
		logf.FromContext(ctx).Info("deleted a child run whose parent is gone", "child", ch.Name, "parent", key.Name)
	}
	return errors.Join(errs...)
}

// childrenOf lists the runs whose spec names parent (by name, and by UID
// when uid is set) from the cache.
func (r *AgentRunReconciler) childrenOf(ctx context.Context, namespace, parent string, uid types.UID) ([]exagentv1.AgentRun, error) {
	var list exagentv1.AgentRunList
	if err := r.Client.List(ctx, &list, client.InNamespace(namespace),
		client.MatchingLabels{exagentv1.LabelParentRun: loop.LabelValue(parent)}); err != nil {
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
// and, at the child's end, the call's outcome follow.
func parentOfRun(_ context.Context, o client.Object) []reconcile.Request {
	run, ok := o.(*exagentv1.AgentRun)
	if !ok || run.Spec.Delegation == nil {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: run.Namespace, Name: run.Spec.Delegation.Parent.Name}}}
}

// orphanSweep deletes, once at start-up, the child runs whose parent is
// gone (deleted while no manager ran): their deletion is the manager's.
type orphanSweep struct{ r *AgentRunReconciler }

// Start implements manager.Runnable.
func (o orphanSweep) Start(ctx context.Context) error {
	var list exagentv1.AgentRunList
	if err := o.r.Client.List(ctx, &list); err != nil {
		logf.FromContext(ctx).Info("could not list runs for the orphan sweep", "error", err.Error())
		return nil
	}
	for i := range list.Items {
		run := &list.Items[i]
		d := run.Spec.Delegation
		if d == nil {
			continue
		}
		parent := &exagentv1.AgentRun{}
		err := o.r.APIReader.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: d.Parent.Name}, parent)
		if err == nil && string(parent.UID) == d.Parent.UID {
			continue
		}
		if err != nil && !apierrors.IsNotFound(err) {
			continue
		}
		if err := o.r.Client.Delete(ctx, run, client.Preconditions{UID: &run.UID}); err != nil && !apierrors.IsNotFound(err) {
			logf.FromContext(ctx).Info("could not delete an orphaned child run", "run", run.Name, "error", err.Error())
			continue
		}
		logf.FromContext(ctx).Info("deleted an orphaned child run: its parent is gone", "run", run.Name, "parent", d.Parent.Name)
	}
	o.sweepSegments(ctx, list.Items)
	return nil
}

// sweepSegments deletes the segments of runs deleted while no manager ran
// (the local control plane has no garbage collector for their
// ownerReference). A segment's run is looked up by its owner reference,
// past the cache, before anything is deleted.
func (o orphanSweep) sweepSegments(ctx context.Context, runs []exagentv1.AgentRun) {
	if o.r.Segments == nil {
		return
	}
	known := map[types.UID]bool{}
	for i := range runs {
		known[runs[i].UID] = true
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(exagentv1.GroupVersion.WithKind("AgentRunSegmentList"))
	if err := o.r.APIReader.List(ctx, list); err != nil {
		logf.FromContext(ctx).Info("could not list segments for the orphan sweep", "error", err.Error())
		return
	}
	checked := map[types.UID]bool{}
	for i := range list.Items {
		seg := &list.Items[i]
		uid := types.UID(seg.Labels[exagentv1.LabelRunUID])
		if uid == "" || known[uid] || checked[uid] {
			continue
		}
		checked[uid] = true
		owner := ""
		for _, ref := range seg.OwnerReferences {
			if ref.Kind == "AgentRun" && ref.UID == uid {
				owner = ref.Name
			}
		}
		if owner == "" {
			continue // not written by the manager: left alone
		}
		run := &exagentv1.AgentRun{}
		err := o.r.APIReader.Get(ctx, types.NamespacedName{Namespace: seg.Namespace, Name: owner}, run)
		if err == nil && run.UID == uid || err != nil && !apierrors.IsNotFound(err) {
			continue
		}
		if err := o.r.Segments.DeleteOf(ctx, seg.Namespace, uid); err != nil {
			logf.FromContext(ctx).Info("could not delete the segments of a deleted run", "run", owner, "error", err.Error())
			continue
		}
		logf.FromContext(ctx).Info("deleted the segments of a run deleted while no manager ran", "run", owner, "uid", uid)
	}
}

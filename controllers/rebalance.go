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
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/index"
	"github.com/exagent-io/exagent/internal/shard"
)

// Rebalancer keeps every run on the shard it belongs to (docs/install.md,
// "Scaling out"). Admission places a run once, at its creation; what it
// placed by can change after: a shard added to or removed from --shards,
// a Namespace pinned or unpinned, an AgentBudget created in a namespace
// (which then is held whole). Each shard's leader looks at the runs in
// its cache, and moves away each tree of work that belongs elsewhere:
// its decisions and segments, its children, then its root, relabelled.
// One shard's leader (a chore) also adopts the runs no shard serves — a
// removed shard's, or the unlabelled ones from before shards.
//
// Moving is safe at any moment because every run write is fenced by the
// run's claim: the shard a run left hands it over (agentrun_moved.go), or
// its lease expires, and the new shard claims it after. A move costs a
// few label patches; they are paced (MovesPerSecond).
type Rebalancer struct {
	// Client is the manager's (its cache holds this shard's runs and
	// decisions, and every Namespace and AgentBudget).
	Client client.Client
	// APIReader lists the runs no shard serves, and segments.
	APIReader client.Reader
	Cache     cache.Cache
	Owner     Ownership
	// Interval is how often the runs are looked at (besides a Namespace
	// or AgentBudget change); DefaultRebalanceInterval when 0.
	Interval time.Duration
	// MovesPerSecond paces the moves (DefaultMovesPerSecond when 0).
	MovesPerSecond float64
	Log            logr.Logger

	poke chan struct{}
}

// DefaultRebalanceInterval is how often a shard's leader looks for runs
// that belong elsewhere when nothing told it to.
const DefaultRebalanceInterval = 2 * time.Minute

// DefaultMovesPerSecond paces moves: a reshard of thousands of runs must
// not take the apiserver's write capacity from the runs themselves.
const DefaultMovesPerSecond = 20

var _ manager.LeaderElectionRunnable = &Rebalancer{}

// NeedLeaderElection is true: one mover per shard.
func (b *Rebalancer) NeedLeaderElection() bool { return true }

// Start looks at the runs at once, then at every Interval and whenever a
// Namespace's labels or the set of AgentBudgets change.
func (b *Rebalancer) Start(ctx context.Context) error {
	if !b.Owner.Serving.Sharded() || !b.Owner.Placer.Enabled() {
		return nil // nothing is placed, so nothing can be misplaced
	}
	b.poke = make(chan struct{}, 1)
	if err := b.watch(ctx); err != nil {
		return err
	}
	if !b.Cache.WaitForCacheSync(ctx) {
		return nil
	}
	interval := b.Interval
	if interval <= 0 {
		interval = DefaultRebalanceInterval
	}
	pace := b.MovesPerSecond
	if pace <= 0 {
		pace = DefaultMovesPerSecond
	}
	limiter := rate.NewLimiter(rate.Limit(pace), int(max(pace, 1)))
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		case <-b.poke:
		}
		moved, err := b.Pass(ctx, limiter)
		if err != nil && ctx.Err() == nil {
			b.Log.Error(err, "rebalancing runs between shards")
		}
		if moved > 0 {
			b.Log.Info("moved runs to the shards they belong to", "runs", moved)
		}
		timer.Reset(interval)
	}
}

// watch pokes the loop when a Namespace's labels or the AgentBudgets change.
func (b *Rebalancer) watch(ctx context.Context) error {
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	for _, obj := range []client.Object{ns, &exagentv1.AgentBudget{}} {
		inf, err := b.Cache.GetInformer(ctx, obj)
		if err != nil {
			return fmt.Errorf("rebalancer: watching %T: %w", obj, err)
		}
		poke := func() {
			select {
			case b.poke <- struct{}{}:
			default:
			}
		}
		if _, err := inf.AddEventHandler(pokeOnChange{poke: poke}); err != nil {
			return fmt.Errorf("rebalancer: watching %T: %w", obj, err)
		}
	}
	return nil
}

// Pass moves, paced by limiter, every run of this shard's cache that
// belongs elsewhere and — when this shard has the chore — every run no
// shard serves; it returns how many runs it moved.
func (b *Rebalancer) Pass(ctx context.Context, limiter *rate.Limiter) (int, error) {
	var runs exagentv1.AgentRunList
	if err := b.Client.List(ctx, &runs); err != nil {
		return 0, fmt.Errorf("listing the cached runs: %w", err)
	}
	moved := 0
	var errs []error
	for i := range runs.Items {
		run := &runs.Items[i]
		n, err := b.settle(ctx, limiter, run)
		moved += n
		if err != nil {
			errs = append(errs, err)
		}
	}
	if b.Owner.OwnsChore("adopt") {
		n, err := b.adopt(ctx, limiter)
		moved += n
		errs = append(errs, err, b.adoptDecisions(ctx, limiter))
	}
	return moved, errors.Join(errs...)
}

// settle moves run (a root with its tree; a child alone, to its root's
// shard) when it is not where it belongs.
func (b *Rebalancer) settle(ctx context.Context, limiter *rate.Limiter, run *exagentv1.AgentRun) (int, error) {
	want, err := b.belongs(ctx, run)
	if err != nil || want.unknown {
		return 0, err
	}
	if got, ok := run.Labels[exagentv1.LabelShard]; ok && got == want.shard {
		return 0, nil
	}
	if err := limiter.Wait(ctx); err != nil {
		return 0, err
	}
	n := 0
	if run.Spec.Delegation == nil {
		// Its tree first, so that the root arrives where its children are.
		children, err := b.tree(ctx, run)
		if err != nil {
			return 0, err
		}
		for i := range children {
			if children[i].Labels[exagentv1.LabelShard] == want.shard {
				continue
			}
			if err := b.move(ctx, &children[i], want.shard); err != nil {
				return n, err
			}
			n++
		}
	}
	if err := b.move(ctx, run, want.shard); err != nil {
		return n, err
	}
	return n + 1, nil
}

// placement is where a run belongs; unknown when that cannot be said now
// (a child whose root is gone: the garbage collector takes it).
type placement struct {
	shard   string
	unknown bool
}

// belongs is the shard run belongs on: a root's placement, or a child's
// root's shard as it is labelled now.
func (b *Rebalancer) belongs(ctx context.Context, run *exagentv1.AgentRun) (placement, error) {
	d := run.Spec.Delegation
	if d == nil {
		p, err := b.Owner.Placer.Place(ctx, run.Namespace, shard.RootKey(run))
		if err != nil {
			return placement{}, err
		}
		return placement{shard: p.Shard}, nil
	}
	root := &exagentv1.AgentRun{}
	if err := b.APIReader.Get(ctx, types.NamespacedName{Namespace: run.Namespace, Name: d.Root.Name}, root); err != nil {
		if apierrors.IsNotFound(err) {
			return placement{unknown: true}, nil
		}
		return placement{}, fmt.Errorf("reading the root run %s of %s/%s: %w", d.Root.Name, run.Namespace, run.Name, err)
	}
	v, ok := root.Labels[exagentv1.LabelShard]
	if string(root.UID) != d.Root.UID || !ok {
		return placement{unknown: true}, nil
	}
	return placement{shard: v}, nil
}

// tree is every descendant of root (children name their root).
func (b *Rebalancer) tree(ctx context.Context, root *exagentv1.AgentRun) ([]exagentv1.AgentRun, error) {
	var list exagentv1.AgentRunList
	if err := b.APIReader.List(ctx, &list, client.InNamespace(root.Namespace),
		client.MatchingLabels{exagentv1.LabelRootRun: exagentv1.LabelValue(root.Name)}); err != nil {
		return nil, fmt.Errorf("listing the tree of run %s/%s: %w", root.Namespace, root.Name, err)
	}
	out := list.Items[:0]
	for _, ch := range list.Items {
		if d := ch.Spec.Delegation; d != nil && d.Root.UID == string(root.UID) {
			out = append(out, ch)
		}
	}
	return out, nil
}

// move relabels run to shard: its segments and decisions first (the new
// shard must find them when it takes the run), the run last.
func (b *Rebalancer) move(ctx context.Context, run *exagentv1.AgentRun, to string) error {
	segs := &metav1.PartialObjectMetadataList{}
	segs.SetGroupVersionKind(exagentv1.GroupVersion.WithKind("AgentRunSegmentList"))
	if err := b.APIReader.List(ctx, segs, client.InNamespace(run.Namespace), client.MatchingLabels{exagentv1.LabelRunUID: string(run.UID)}); err != nil {
		return fmt.Errorf("listing the segments of run %s/%s: %w", run.Namespace, run.Name, err)
	}
	for i := range segs.Items {
		seg := &segs.Items[i]
		seg.SetGroupVersionKind(exagentv1.GroupVersion.WithKind("AgentRunSegment"))
		if err := relabel(ctx, b.Client, seg, to); err != nil {
			return err
		}
	}
	var decisions exagentv1.ApprovalDecisionList
	// This shard's decisions are in its cache; an adopted run's are not,
	// and the chore adopts them on their own (adoptDecisions).
	if err := b.Client.List(ctx, &decisions, client.InNamespace(run.Namespace), client.MatchingFields{index.RunRef: run.Name}); err != nil {
		return fmt.Errorf("listing the decisions of run %s/%s: %w", run.Namespace, run.Name, err)
	}
	for i := range decisions.Items {
		if err := relabel(ctx, b.Client, &decisions.Items[i], to); err != nil {
			return err
		}
	}
	if err := relabel(ctx, b.Client, run, to); err != nil {
		return err
	}
	b.Log.V(1).Info("moved run", "run", client.ObjectKeyFromObject(run), "from", run.Labels[exagentv1.LabelShard], "to", to)
	return nil
}

// relabel sets obj's shard label to shard with a merge patch of that
// label alone (nothing else of the object is read or written, so it
// never races its status writes).
func relabel(ctx context.Context, c client.Client, obj client.Object, to string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{exagentv1.LabelShard: to}}})
	if err != nil {
		return err
	}
	if err := c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("moving %s %s/%s to shard %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetNamespace(), obj.GetName(), to, err)
	}
	return nil
}

// adopt moves the runs labelled with no shard of --shards (or none) that
// belong to one: a removed shard's, the unlabelled ones. It reads only
// their metadata, a page at a time; a run pinned to a dedicated shard
// outside the list stays.
func (b *Rebalancer) adopt(ctx context.Context, limiter *rate.Limiter) (int, error) {
	req, err := labels.NewRequirement(exagentv1.LabelShard, selection.NotIn, b.Owner.Placer.Shards.Names())
	if err != nil {
		return 0, fmt.Errorf("selecting the runs no shard serves: %w", err)
	}
	sel := labels.NewSelector().Add(*req)
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(exagentv1.GroupVersion.WithKind("AgentRunList"))
	opts := &client.ListOptions{LabelSelector: sel, Limit: 500}
	moved := 0
	for {
		if err := b.APIReader.List(ctx, list, opts); err != nil {
			return moved, fmt.Errorf("listing the runs no shard serves: %w", err)
		}
		for i := range list.Items {
			m := &list.Items[i]
			if m.Labels[exagentv1.LabelParentRun] != "" {
				continue // a child moves with its root, or alone once its root is placed (settle)
			}
			run := &exagentv1.AgentRun{}
			if err := b.APIReader.Get(ctx, client.ObjectKeyFromObject(m), run); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return moved, fmt.Errorf("reading run %s/%s: %w", m.Namespace, m.Name, err)
			}
			n, err := b.settle(ctx, limiter, run)
			moved += n
			if err != nil {
				return moved, err
			}
		}
		if list.Continue == "" {
			return moved, nil
		}
		opts.Continue = list.Continue
	}
}

// pokeOnChange pokes on a created or deleted object, and on an update
// that changed its shard label (a Namespace's pin); nothing else of a
// Namespace or an AgentBudget changes where runs belong.
type pokeOnChange struct{ poke func() }

var _ toolscache.ResourceEventHandler = pokeOnChange{}

func (p pokeOnChange) OnAdd(_ any, initial bool) {
	if !initial {
		p.poke()
	}
}

func (p pokeOnChange) OnUpdate(oldObj, newObj any) {
	o, ok1 := oldObj.(client.Object)
	n, ok2 := newObj.(client.Object)
	if !ok1 || !ok2 || o.GetLabels()[exagentv1.LabelShard] != n.GetLabels()[exagentv1.LabelShard] {
		p.poke()
	}
}

func (p pokeOnChange) OnDelete(any) { p.poke() }

// adoptDecisions gives the decisions labelled with no shard of --shards
// (or none) their run's shard: a pending decision of a run that moved
// from a removed shard must reach the run's new manager.
func (b *Rebalancer) adoptDecisions(ctx context.Context, limiter *rate.Limiter) error {
	req, err := labels.NewRequirement(exagentv1.LabelShard, selection.NotIn, b.Owner.Placer.Shards.Names())
	if err != nil {
		return fmt.Errorf("selecting the decisions no shard serves: %w", err)
	}
	list := &exagentv1.ApprovalDecisionList{}
	opts := &client.ListOptions{LabelSelector: labels.NewSelector().Add(*req), Limit: 500}
	for {
		if err := b.APIReader.List(ctx, list, opts); err != nil {
			return fmt.Errorf("listing the decisions no shard serves: %w", err)
		}
		for i := range list.Items {
			d := &list.Items[i]
			run := &metav1.PartialObjectMetadata{}
			run.SetGroupVersionKind(exagentv1.GroupVersion.WithKind("AgentRun"))
			if err := b.APIReader.Get(ctx, types.NamespacedName{Namespace: d.Namespace, Name: d.Spec.RunRef.Name}, run); err != nil {
				if apierrors.IsNotFound(err) {
					continue // the garbage collector's
				}
				return fmt.Errorf("reading the run of decision %s/%s: %w", d.Namespace, d.Name, err)
			}
			to, ok := run.Labels[exagentv1.LabelShard]
			if !ok || to == d.Labels[exagentv1.LabelShard] {
				continue
			}
			if err := limiter.Wait(ctx); err != nil {
				return err
			}
			if err := relabel(ctx, b.Client, d, to); err != nil {
				return err
			}
		}
		if list.Continue == "" {
			return nil
		}
		opts.Continue = list.Continue
	}
}

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

package retention

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/archive"
	"github.com/exagent-io/exagent/internal/index"
	"github.com/exagent-io/exagent/internal/shard"
	"github.com/exagent-io/exagent/loop"
)

// A conversation is retention's unit for its turns: a turn is never
// reaped on its own (later turns continue its transcript and share its
// segments), so an idle conversation goes whole — every turn archived
// first to its agentRef Agent's sink, then the Conversation deleted, and
// the garbage collector deletes its turns (it owns them) and their
// segments and decisions. The decision is loop.ConversationReapable's; a
// conversation is one work item of the fair per-namespace workers, like
// a run tree.

// +kubebuilder:rbac:groups=exagent.io,resources=conversations,verbs=get;list;watch;delete

var retentionDeletedConversationsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "exagent_retention_deleted_conversations_total",
	Help: "Idle conversations retention deleted with every turn (each turn archived first when the Agent has an archive), by why: TTL or KeepLast.",
}, []string{"reason"})

func init() { metrics.Registry.MustRegister(retentionDeletedConversationsTotal) }

// conversationChanged queues an idle conversation (its TTL) and its
// Agent when that Agent has a keepLast (its idle conversations count).
// One with a turn open waits for the status write that ends it.
func (r *Reaper) conversationChanged(o any) {
	conv, ok := o.(*exagentv1.Conversation)
	if !ok {
		return
	}
	if _, idle := loop.IdleConversation(&conv.Status); !idle {
		return
	}
	r.queue.Add(reapItem{kind: itemConversation, key: client.ObjectKeyFromObject(conv)})
	agent := &exagentv1.Agent{}
	if err := r.client.Get(context.Background(), types.NamespacedName{Namespace: conv.Namespace, Name: conv.Spec.AgentRef.Name}, agent); err == nil &&
		agent.Spec.Retention.KeepLast != nil {
		r.queue.Add(reapItem{kind: itemAgent, key: client.ObjectKeyFromObject(agent)})
	}
}

// conversationDeleted queues the conversation a deleted fork forked: it
// may be kept no longer.
func (r *Reaper) conversationDeleted(o any) {
	if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	conv, ok := o.(*exagentv1.Conversation)
	if !ok || conv.Spec.ForkOf == nil {
		return
	}
	r.queue.Add(reapItem{kind: itemConversation, key: types.NamespacedName{Namespace: conv.Namespace, Name: conv.Spec.ForkOf.Name}})
}

// queueConversationsOf queues the idle conversations of agent: its TTL
// and archive may have changed.
func (r *Reaper) queueConversationsOf(agent *exagentv1.Agent) {
	var convs exagentv1.ConversationList
	if err := r.client.List(context.Background(), &convs, client.InNamespace(agent.Namespace),
		client.MatchingFields{index.ConversationAgentRef: agent.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return
	}
	for i := range convs.Items {
		if _, idle := loop.IdleConversation(&convs.Items[i].Status); idle {
			r.queue.Add(reapItem{kind: itemConversation, key: client.ObjectKeyFromObject(&convs.Items[i])})
		}
	}
}

// processConversation deletes an idle conversation whose TTL has passed
// since its newest turn ended, or says when to look again.
func (r *Reaper) processConversation(ctx context.Context, key types.NamespacedName) (time.Duration, error) {
	conv := &exagentv1.Conversation{}
	if err := r.client.Get(ctx, key, conv); err != nil {
		return 0, client.IgnoreNotFound(err)
	}
	since, idle := loop.IdleConversation(&conv.Status)
	if !idle {
		return 0, nil // the status write that ends its open turn brings it back
	}
	ret := r.conversationRetention(ctx, conv)
	if ret.TTL == nil {
		return 0, nil // kept (a keepLast is the Agent's item)
	}
	if now, at := r.clock.Now(), since.Add(*ret.TTL); now.Before(at) {
		return at.Sub(now), nil
	}
	return r.reapConversation(ctx, conv, ret, false)
}

// keepLastConversations applies agent's keepLast to its idle
// conversations, counted apart from its runs, each as one.
func (r *Reaper) keepLastConversations(ctx context.Context, agent *exagentv1.Agent, keep int) (time.Duration, error) {
	var convs exagentv1.ConversationList
	if err := r.client.List(ctx, &convs, client.InNamespace(agent.Namespace),
		client.MatchingFields{index.ConversationAgentRef: agent.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return 0, fmt.Errorf("listing the conversations of agent %s/%s: %w", agent.Namespace, agent.Name, err)
	}
	var (
		idle []loop.IdleConv
		refs []*exagentv1.Conversation
	)
	for i := range convs.Items {
		if since, ok := loop.IdleConversation(&convs.Items[i].Status); ok {
			idle = append(idle, loop.IdleConv{Name: convs.Items[i].Name, Since: since})
			refs = append(refs, &convs.Items[i])
		}
	}
	var next time.Duration
	for _, i := range loop.KeepLastConversations(idle, keep) {
		if ctx.Err() != nil {
			return 0, nil
		}
		ret := loop.ResolveConversationRetention(&refs[i].Spec.Retention, &agent.Spec.Retention, r.defaultTTL)
		after, err := r.reapConversation(ctx, refs[i].DeepCopy(), ret, true)
		if err != nil {
			return 0, err
		}
		next = sooner(next, after)
	}
	return next, nil
}

// conversationRetention is the conversation's retention: its spec, its
// agentRef Agent's (from the cache; none when the Agent is gone) and the
// manager's default TTL.
func (r *Reaper) conversationRetention(ctx context.Context, conv *exagentv1.Conversation) loop.Retention {
	agent := &exagentv1.Agent{}
	if err := r.client.Get(ctx, types.NamespacedName{Namespace: conv.Namespace, Name: conv.Spec.AgentRef.Name}, agent); err != nil {
		if !apierrors.IsNotFound(err) {
			logf.FromContext(ctx).Info("retention: reading the conversation's Agent", "conversation", conv.Name, "error", err.Error())
		}
		return loop.ResolveConversationRetention(&conv.Spec.Retention, nil, r.defaultTTL)
	}
	return loop.ResolveConversationRetention(&conv.Spec.Retention, &agent.Spec.Retention, r.defaultTTL)
}

// reapConversation deletes a due conversation with every turn, each
// archived first when ret has a sink. Like reap for a run tree, every
// step is idempotent and decided from what is stored:
//  1. the Conversation and each turn are read past the cache; it must
//     still be the one decided on (same UID), and loop.ConversationReapable
//     must say so of it and its turns;
//  2. with a sink, each turn in order is read again whole and archived as
//     a run is (its journal, its backoff), its record naming the
//     conversation and its place; a failure holds the whole
//     conversation, nothing deleted; a turn written since step 1 means
//     looking again;
//  3. the turns are listed again past the cache: a turn created since
//     they were read, or written since it was archived (no archive covers
//     it), means looking again;
//  4. the Conversation is deleted with a resourceVersion precondition,
//     and the garbage collector deletes its turns (their owner), and with
//     them their segments and decisions; a turn it does not own (created
//     with admission bypassed) is deleted by the reaper, on the version
//     archived.
func (r *Reaper) reapConversation(ctx context.Context, cached *exagentv1.Conversation, ret loop.Retention, byKeepLast bool) (time.Duration, error) {
	if r.owns != nil {
		// Every shard caches every Conversation; the shard of its turns
		// archives and deletes it, the others leave it alone.
		owns, err := r.owns(ctx, cached.Namespace, shard.ConversationKey(cached.Name))
		if err != nil || !owns {
			return 0, err
		}
	}
	key := client.ObjectKeyFromObject(cached)
	item := reapItem{kind: itemConversation, key: key}
	if !r.take(item) {
		return 0, nil // another worker is at it, and looks again if it must
	}
	defer r.release(item)
	conv := &exagentv1.Conversation{}
	if err := r.reader.Get(ctx, key, conv); err != nil {
		return 0, client.IgnoreNotFound(err)
	}
	if conv.UID != cached.UID {
		return 0, nil // re-created: the new one is looked at on its own
	}
	turns, err := r.turnsOf(ctx, conv)
	if err != nil {
		return 0, err
	}
	state := r.conversationState(conv, turns)
	if state.ForkedBy, err = r.forkOf(ctx, conv); err != nil {
		return 0, err
	}
	d := loop.ConversationReapable(state, ret, byKeepLast, r.clock.Now(), r.lateWindow)
	if d.GitOps {
		r.keptConversationFromGitOps(conv, d.Why)
		return 0, nil // a change of it, its turns or its Agent brings it back
	}
	if !d.Reap {
		logf.FromContext(ctx).V(1).Info("retention: the conversation is due but kept for now", "conversation", key, "why", d.Why)
		return r.lookAgainAt(d.Until), nil
	}
	if ret.Archive != nil {
		for i := range turns {
			to := archiveTo{sink: ret.Archive, agent: conv.Spec.AgentRef.Name, of: conv,
				conv: &archive.Conversation{Name: conv.Name, UID: string(conv.UID), Turn: i + 1, Turns: len(turns)}}
			rv, after, err := r.archiveTurn(ctx, &turns[i], to)
			if err != nil || after > 0 {
				return after, err // held: every turn kept, the conversation with them
			}
			turns[i].ResourceVersion = rv
		}
	}
	if err := r.sameTurns(ctx, conv, turns); err != nil {
		return 0, err
	}
	if err := r.deleteConversation(ctx, conv, turns); err != nil {
		return 0, err
	}
	reason := deletedTTL
	if byKeepLast {
		reason = deletedKeepLast
	}
	retentionDeletedConversationsTotal.WithLabelValues(reason).Inc()
	logf.FromContext(ctx).Info("retention deleted an idle conversation with every turn", "conversation", key, "why", reason,
		"turns", len(turns), "archived", ret.Archive != nil)
	return 0, nil
}

// archiveTurn reads a turn again whole, past the cache, and archives it
// (archive); it returns the version the delivered archive covers. A turn
// written since it was decided on is looked at again from the start.
func (r *Reaper) archiveTurn(ctx context.Context, slim *exagentv1.AgentRun, to archiveTo) (string, time.Duration, error) {
	run := &exagentv1.AgentRun{}
	if err := r.reader.Get(ctx, client.ObjectKeyFromObject(slim), run); err != nil {
		if apierrors.IsNotFound(err) {
			return "", 0, fmt.Errorf("turn %s/%s was deleted since it was read (%w)", slim.Namespace, slim.Name, errRunChanged)
		}
		return "", 0, fmt.Errorf("reading turn %s/%s: %w", slim.Namespace, slim.Name, err)
	}
	if run.UID != slim.UID || run.ResourceVersion != slim.ResourceVersion {
		return "", 0, fmt.Errorf("turn %s/%s was written since it was read (%w)", slim.Namespace, slim.Name, errRunChanged)
	}
	covered, after, err := r.archive(ctx, run, to)
	if err != nil || after > 0 {
		return "", after, err
	}
	return covered.ResourceVersion, 0, nil
}

// forkOf names a Conversation that forks conv (from the cache; "" when
// none): conv is kept while it exists, its turns reading conv's segments.
// Its deletion brings conv back (conversationDeleted).
func (r *Reaper) forkOf(ctx context.Context, conv *exagentv1.Conversation) (string, error) {
	var convs exagentv1.ConversationList
	if err := r.client.List(ctx, &convs, client.InNamespace(conv.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return "", fmt.Errorf("listing the conversations that may fork %s/%s: %w", conv.Namespace, conv.Name, err)
	}
	for i := range convs.Items {
		if f := convs.Items[i].Spec.ForkOf; f != nil && f.Name == conv.Name && convs.Items[i].UID != conv.UID {
			return convs.Items[i].Name, nil
		}
	}
	return "", nil
}

// conversationState is what loop.ConversationReapable reads of conv and
// its turns.
func (r *Reaper) conversationState(conv *exagentv1.Conversation, turns []exagentv1.AgentRun) loop.ConversationState {
	s := loop.ConversationState{Open: conv.Status.Open}
	if at := conv.Status.LastTurnEndedAt; at != nil {
		s.LastTurnEndedAt = at.Time
	}
	s.GitOps, _ = loop.GitOpsManager(conv.Labels, conv.Annotations)
	for i := range turns {
		t := &turns[i]
		tool, _ := loop.GitOpsManager(t.Labels, t.Annotations)
		s.Turns = append(s.Turns, loop.ConversationTurn{Name: t.Name, Created: t.TurnCreated(), Status: &t.Status,
			Running: r.running != nil && r.running(client.ObjectKeyFromObject(t)), GitOps: tool})
	}
	return s
}

// turnsOf are conv's turns in the conversation's order, each read past
// the cache and slimmed (slimTurn). A turn owned by another Conversation
// of the same name (one deleted and created again) is not this one's:
// the garbage collector takes it with its own.
func (r *Reaper) turnsOf(ctx context.Context, conv *exagentv1.Conversation) ([]exagentv1.AgentRun, error) {
	var list exagentv1.AgentRunList
	if err := r.client.List(ctx, &list, client.InNamespace(conv.Namespace),
		client.MatchingFields{index.ConversationRef: conv.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing the turns of conversation %s/%s: %w", conv.Namespace, conv.Name, err)
	}
	var (
		views []loop.TurnView
		read  = map[string]*exagentv1.AgentRun{}
	)
	for i := range list.Items {
		if !turnOf(&list.Items[i].ObjectMeta, conv) {
			continue
		}
		run := &exagentv1.AgentRun{}
		if err := r.reader.Get(ctx, client.ObjectKeyFromObject(&list.Items[i]), run); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("reading turn %s of conversation %s/%s: %w", list.Items[i].Name, conv.Namespace, conv.Name, err)
		}
		if run.UID != list.Items[i].UID || !turnOf(&run.ObjectMeta, conv) {
			continue
		}
		slimTurn(run)
		views = append(views, loop.TurnView{Name: run.Name, Created: run.TurnCreated()})
		read[run.Name] = run
	}
	loop.OrderTurns(views)
	out := make([]exagentv1.AgentRun, 0, len(views))
	for _, v := range views {
		out = append(out, *read[v.Name])
	}
	return out, nil
}

// slimTurn keeps of a turn what the decision reads — metadata, phase,
// conditions, notifications, the calls' states — and lets go of its
// transcript tail, answer and the calls' values: a conversation of a
// thousand turns is decided on without holding a thousand statuses (each
// turn is read again, whole, when it is archived).
func slimTurn(run *exagentv1.AgentRun) {
	run.ManagedFields = nil
	st := &run.Status
	st.History, st.Output = nil, ""
	for i := range st.Calls {
		c := &st.Calls[i]
		c.Args = ""
		if c.Outcome != nil {
			c.Outcome.Result, c.Outcome.Evidence = "", ""
		}
	}
}

// turnOf reports whether the object (a turn naming conv) belongs to conv:
// no Conversation of another UID owns it.
func turnOf(m *metav1.ObjectMeta, conv *exagentv1.Conversation) bool {
	for _, o := range m.OwnerReferences {
		if o.Kind == "Conversation" && o.Name == conv.Name && o.UID != conv.UID {
			return false
		}
	}
	return true
}

// ownedBy reports whether conv owns the turn (the garbage collector
// deletes it with conv).
func ownedBy(m *metav1.ObjectMeta, conv *exagentv1.Conversation) bool {
	for _, o := range m.OwnerReferences {
		if o.Kind == "Conversation" && o.UID == conv.UID {
			return true
		}
	}
	return false
}

// sameTurns lists conv's turns again past the cache (metadata only, by
// the label admission sets) and returns errRunChanged when one was
// created since they were read (the cache had not seen it), or written
// since it was archived: the conversation is looked at again, and
// nothing unarchived is deleted with it. An object that carries the
// label and the owner but names no such conversation (its metadata
// edited) is no turn of it: it never makes the reaper look again, which
// would be a loop.
func (r *Reaper) sameTurns(ctx context.Context, conv *exagentv1.Conversation, turns []exagentv1.AgentRun) error {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(exagentv1.GroupVersion.WithKind("AgentRunList"))
	if err := r.reader.List(ctx, list, client.InNamespace(conv.Namespace),
		client.MatchingLabels{exagentv1.LabelConversation: exagentv1.LabelValue(conv.Name)}); err != nil {
		return fmt.Errorf("listing the turns of conversation %s/%s: %w", conv.Namespace, conv.Name, err)
	}
	versions := make(map[types.UID]string, len(turns))
	for i := range turns {
		versions[turns[i].UID] = turns[i].ResourceVersion
	}
	for i := range list.Items {
		m := &list.Items[i]
		if !ownedBy(&m.ObjectMeta, conv) {
			continue // another conversation's, or not deleted with this one
		}
		rv, known := versions[m.UID]
		if known && rv == m.ResourceVersion {
			continue
		}
		if !known {
			run := &exagentv1.AgentRun{}
			err := r.reader.Get(ctx, types.NamespacedName{Namespace: m.Namespace, Name: m.Name}, run)
			if apierrors.IsNotFound(err) || (err == nil && (run.Spec.ConversationRef == nil || run.Spec.ConversationRef.Name != conv.Name)) {
				continue
			}
			if err != nil {
				return fmt.Errorf("reading turn %s of conversation %s/%s: %w", m.Name, conv.Namespace, conv.Name, err)
			}
		}
		return fmt.Errorf("turn %s of conversation %s/%s was created or written since it was read (%w)", m.Name, conv.Namespace, conv.Name, errRunChanged)
	}
	return nil
}

// deleteConversation deletes conv on the version read: one written since
// (a turn's start, a spec change) is looked at again. The garbage
// collector then deletes the turns it owns, in the background; a turn it
// does not own is deleted here on the version archived (deleteRun).
func (r *Reaper) deleteConversation(ctx context.Context, conv *exagentv1.Conversation, turns []exagentv1.AgentRun) error {
	err := r.client.Delete(ctx, conv, client.Preconditions{UID: &conv.UID, ResourceVersion: &conv.ResourceVersion},
		client.PropagationPolicy(metav1.DeletePropagationBackground))
	switch {
	case err == nil, apierrors.IsNotFound(err):
	case apierrors.IsConflict(err):
		return fmt.Errorf("conversation %s/%s changed since it was read (%w): %v", conv.Namespace, conv.Name, errRunChanged, err)
	default:
		return fmt.Errorf("deleting conversation %s/%s: %w", conv.Namespace, conv.Name, err)
	}
	for i := range turns {
		if !ownedBy(&turns[i].ObjectMeta, conv) {
			if err := r.deleteRun(ctx, &turns[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// keptConversationFromGitOps tells, with a Warning Event on the
// Conversation, why retention leaves a due conversation alone.
func (r *Reaper) keptConversationFromGitOps(conv *exagentv1.Conversation, why string) {
	logf.FromContext(r.life).V(1).Info("retention: the conversation is due but a GitOps tool manages it or a turn", "conversation", conv.Name, "namespace", conv.Namespace)
	if r.recorder != nil {
		r.recorder.Eventf(conv, nil, corev1.EventTypeWarning, exagentv1.ReasonRetentionGitOpsManaged, exagentv1.ReasonRetentionGitOpsManaged, "%s", why)
	}
}

// heldConversation says on the Conversation that a turn's failing archive
// holds it (at the same doublings as the turn's own Event).
func (r *Reaper) heldConversation(conv *exagentv1.Conversation, turn *exagentv1.AgentRun, agent string) {
	rec := turn.Status.Archive
	if r.recorder == nil || rec == nil || rec.Attempts&(rec.Attempts-1) != 0 {
		return
	}
	r.recorder.Eventf(conv, nil, corev1.EventTypeWarning, exagentv1.ReasonArchiveSinkFailing, exagentv1.ReasonArchiveSinkFailing,
		"the archive sink %s failed for turn %s (attempt %d: %s); the conversation is kept with every turn, never deleted unarchived, and sent again with backoff: "+
			"fix the sink, or remove retention.archive from agent %s", rec.Sink, turn.Name, rec.Attempts, truncate(rec.LastError, 400), agent)
}

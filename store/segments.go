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

package store

import (
	"context"
	"fmt"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/segment"
)

// +kubebuilder:rbac:groups=exagent.io,resources=agentrunsegments,verbs=get;list;create

// DefaultSegmentCacheBytes bounds the segments kept in memory.
const DefaultSegmentCacheBytes = 32 << 20

// Segments creates and reads the AgentRunSegments of runs (docs/architecture.md §10).
// Segments are never watched: they are read past the informer cache, by
// name, and kept in a bounded LRU keyed by name — a name is the content's
// hash, so a cached copy is never stale. What a cached copy cannot tell is
// whether the object still exists: before the chain is used for IO, one
// metadata List of the run's segments proves every link is still stored
// (and is still the object that was read: same UID).
type Segments struct {
	client client.Client
	reader client.Reader

	// observer is the store's (WithObserver): told of each segment created.
	observer Observer

	mu       sync.Mutex
	cache    *simplelru.LRU[string, cachedSegment]
	bytes    int
	maxBytes int
}

type cachedSegment struct {
	uid  types.UID
	seg  segment.Segment
	size int
}

// NewSegments builds the segment store; maxBytes 0 means DefaultSegmentCacheBytes.
func NewSegments(c client.Client, reader client.Reader, maxBytes int) *Segments {
	if maxBytes <= 0 {
		maxBytes = DefaultSegmentCacheBytes
	}
	s := &Segments{client: c, reader: reader, maxBytes: maxBytes}
	// The count bound is loose: the byte bound is the one that matters.
	s.cache, _ = simplelru.NewLRU[string, cachedSegment](1<<16, func(_ string, v cachedSegment) { s.bytes -= v.size })
	return s
}

// segmentSize is the length of seg's canonical content (what
// status.transcript.segmentBytes counts); 0 when it cannot be encoded.
func segmentSize(seg segment.Segment) int {
	if seg.Size > 0 {
		return seg.Size
	}
	_, n, err := segment.Name(&seg.Spec)
	if err != nil {
		return 0
	}
	return n
}

func (s *Segments) put(uid types.UID, seg segment.Segment) {
	size := segmentSize(seg)
	if size <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.cache.Peek(seg.Name); ok {
		s.cache.Remove(seg.Name)
	}
	s.cache.Add(seg.Name, cachedSegment{uid: uid, seg: seg, size: size})
	s.bytes += size
	for s.bytes > s.maxBytes && s.cache.Len() > 1 {
		s.cache.RemoveOldest()
	}
}

func (s *Segments) get(name string) (cachedSegment, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cache.Get(name)
}

// Create stores segs for run, in order, before the commit that references
// them. A segment that already exists with the same content is success
// (a retried commit, or one whose owner crashed after creating it); one
// with the same name and other content is refused.
func (s *Segments) Create(ctx context.Context, run *exagentv1.AgentRun, segs []segment.Segment) error {
	for _, seg := range segs {
		obj := &exagentv1.AgentRunSegment{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: run.Namespace,
				Name:      seg.Name,
				Labels:    segmentLabels(run),
				// Deleted with the run by the garbage collector — a turn's
				// only once its conversation is gone too: later turns take
				// its chain by reference (segmentOwners).
				OwnerReferences: segmentOwners(run),
			},
			Spec: *seg.Spec.DeepCopy(),
		}
		err := s.client.Create(ctx, obj)
		if err == nil {
			s.observer.segmentCreated(run.Namespace, segmentSize(seg))
		}
		if apierrors.IsAlreadyExists(err) {
			existing := &exagentv1.AgentRunSegment{}
			if err := s.reader.Get(ctx, client.ObjectKeyFromObject(obj), existing); err != nil {
				return fmt.Errorf("reading existing segment %s of run %s: %w", seg.Name, run.Name, err)
			}
			if got, _, _ := segment.Name(&existing.Spec); got != seg.Name || existing.Spec.RunUID != string(run.UID) {
				return fmt.Errorf("segment %s of run %s exists with other content", seg.Name, run.Name)
			}
			obj = existing
			err = nil
		}
		if err != nil {
			return fmt.Errorf("creating segment %d (%s) of run %s: %w", seg.Spec.Index, seg.Name, run.Name, err)
		}
		s.put(obj.UID, seg)
	}
	return nil
}

// Chain reads and verifies the chain the run's status.transcript names,
// index 0 first (segment.Walk). A link that is missing, edited, of another
// run or out of order is a segment.CorruptError, which the engine reads as
// reason TranscriptCorrupt (loop.IsPermanent); anything else (the
// apiserver unreachable) is transient.
func (s *Segments) Chain(ctx context.Context, run *exagentv1.AgentRun) ([]segment.Segment, error) {
	return s.chain(ctx, run)
}

// ChainOnce is Chain for a chain read once and let go (a run's archive):
// every segment is read by name past the cache and verified, and none is
// cached, so one run's whole transcript never evicts the segments the
// live runs use. Reading each one from the apiserver is also the proof
// that it is stored, so no list of the run's segments is made.
func (s *Segments) ChainOnce(ctx context.Context, run *exagentv1.AgentRun) ([]segment.Segment, error) {
	head := run.Status.Transcript
	if head == nil || head.Segments == 0 {
		return nil, nil
	}
	return segment.Walk(*head, string(run.UID), func(name string, _ int32) (segment.Segment, error) {
		return s.fetch(ctx, run.Namespace, name)
	})
}

func (s *Segments) chain(ctx context.Context, run *exagentv1.AgentRun) ([]segment.Segment, error) {
	head := run.Status.Transcript
	if head == nil || head.Segments == 0 {
		return nil, nil
	}
	stored, err := s.storedUIDs(ctx, run)
	if err != nil {
		return nil, err
	}
	return segment.Walk(*head, string(run.UID), func(name string, index int32) (segment.Segment, error) {
		if index < head.BaseSegments {
			return s.inherited(ctx, run, name, index)
		}
		uid, ok := stored[name]
		if !ok {
			return segment.Segment{}, segment.Corruptf("segment %s (index %d) of run %s is missing", name, index, run.Name)
		}
		return s.read(ctx, run.Namespace, name, uid)
	})
}

// inherited reads a segment an earlier turn of the run's conversation
// sealed (index below the head's baseSegments): from the cache when it
// holds it — a name is its content's hash, so a cached copy is never
// stale — else by name past the cache, which also proves it is stored.
func (s *Segments) inherited(ctx context.Context, run *exagentv1.AgentRun, name string, index int32) (segment.Segment, error) {
	if c, ok := s.get(name); ok {
		return c.seg, nil
	}
	seg, uid, err := s.fetchObject(ctx, run.Namespace, name) // a missing one is a segment.CorruptError
	if err != nil {
		return segment.Segment{}, fmt.Errorf("segment %d of run %s, sealed by an earlier turn of its conversation: %w", index, run.Name, err)
	}
	s.put(uid, seg)
	return seg, nil
}

// storedUIDs lists the run's segments' names and UIDs (metadata only).
func (s *Segments) storedUIDs(ctx context.Context, run *exagentv1.AgentRun) (map[string]types.UID, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(exagentv1.GroupVersion.WithKind("AgentRunSegmentList"))
	if err := s.reader.List(ctx, list, client.InNamespace(run.Namespace),
		client.MatchingLabels{exagentv1.LabelRunUID: string(run.UID)}); err != nil {
		return nil, fmt.Errorf("listing segments of run %s: %w", run.Name, err)
	}
	out := make(map[string]types.UID, len(list.Items))
	for i := range list.Items {
		out[list.Items[i].Name] = list.Items[i].UID
	}
	return out, nil
}

// read returns segment name with its content verified (its hash is its
// name): from the cache when the cached copy is the stored object (same
// UID), else from the apiserver. Only verified copies are cached.
func (s *Segments) read(ctx context.Context, ns, name string, uid types.UID) (segment.Segment, error) {
	if c, ok := s.get(name); ok && c.uid == uid {
		return c.seg, nil
	}
	seg, uid, err := s.fetchObject(ctx, ns, name)
	if err != nil {
		return segment.Segment{}, err
	}
	s.put(uid, seg)
	return seg, nil
}

// fetch reads segment name past the cache, verified, without caching it.
func (s *Segments) fetch(ctx context.Context, ns, name string) (segment.Segment, error) {
	seg, _, err := s.fetchObject(ctx, ns, name)
	return seg, err
}

func (s *Segments) fetchObject(ctx context.Context, ns, name string) (segment.Segment, types.UID, error) {
	obj := &exagentv1.AgentRunSegment{}
	if err := s.reader.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return segment.Segment{}, "", segment.Corruptf("segment %s is missing", name)
		}
		return segment.Segment{}, "", fmt.Errorf("reading segment %s: %w", name, err)
	}
	seg := segment.Segment{Name: obj.Name, Spec: obj.Spec}
	if err := segment.Check(seg); err != nil {
		return segment.Segment{}, "", err
	}
	return seg, obj.UID, nil
}

// segmentOwners are the owners of a segment of run: the run (controller),
// and for a turn of a conversation the Conversation too, as admission
// made it the turn's owner.
func segmentOwners(run *exagentv1.AgentRun) []metav1.OwnerReference {
	owners := []metav1.OwnerReference{exagentv1.RunControllerReference(run, false)}
	if conv, ok := run.ConversationOwner(); ok {
		owners = append(owners, metav1.OwnerReference{APIVersion: conv.APIVersion, Kind: conv.Kind, Name: conv.Name, UID: conv.UID})
	}
	return owners
}

// segmentLabels are a segment's labels: its run's name and UID, and its
// run's shard when it has one (the shard's managers serve it).
func segmentLabels(run *exagentv1.AgentRun) map[string]string {
	l := map[string]string{exagentv1.LabelRun: exagentv1.LabelValue(run.Name), exagentv1.LabelRunUID: string(run.UID)}
	if v, ok := run.Labels[exagentv1.LabelShard]; ok {
		l[exagentv1.LabelShard] = v
	}
	return l
}

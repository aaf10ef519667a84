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
	"time"

	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/segment"
)

// Observer is told what the store did, for the manager's metrics (which
// the controllers own). A nil func is skipped.
type Observer struct {
	// Committed: a status write landed; old is the run as read, written
	// the run as stored.
	Committed func(old, written *exagentv1.AgentRun, now time.Time)
	// WriteFailed: a status write did not land (a conflict included).
	WriteFailed func(err error)
	// SegmentCreated: a segment of bytes canonical bytes was created in
	// namespace.
	SegmentCreated func(namespace string, bytes int)
}

func (o Observer) committed(old, written *exagentv1.AgentRun, now time.Time) {
	if o.Committed != nil {
		o.Committed(old, written, now)
	}
}

func (o Observer) writeFailed(err error) {
	if o.WriteFailed != nil {
		o.WriteFailed(err)
	}
}

func (o Observer) segmentCreated(namespace string, bytes int) {
	if o.SegmentCreated != nil {
		o.SegmentCreated(namespace, bytes)
	}
}

// Hooks are the write path's named points where a test can stop the
// process (cancel the manager's context) to reproduce a crash in an exact
// window; production leaves them nil.
type Hooks struct {
	// BeforeStatusWrite runs before a status is written, with the status
	// about to be sent.
	BeforeStatusWrite func(ctx context.Context, run types.NamespacedName, status *exagentv1.AgentRunStatus)
	// AfterSegmentsCreated runs when a commit's segments were created,
	// before the commit that references them.
	AfterSegmentsCreated func(ctx context.Context, run types.NamespacedName, segs []segment.Segment)
}

func (h Hooks) beforeStatusWrite(ctx context.Context, run types.NamespacedName, status *exagentv1.AgentRunStatus) {
	if h.BeforeStatusWrite != nil {
		h.BeforeStatusWrite(ctx, run, status)
	}
}

func (h Hooks) afterSegmentsCreated(ctx context.Context, run types.NamespacedName, segs []segment.Segment) {
	if h.AfterSegmentsCreated != nil {
		h.AfterSegmentsCreated(ctx, run, segs)
	}
}

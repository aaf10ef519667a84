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
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/notify"
	"github.com/exagent-io/exagent/internal/segment"
	"github.com/exagent-io/exagent/internal/telemetry"
	"github.com/exagent-io/exagent/loop"
)

// Write is one status write as a phase decided it: what Store.Commit
// writes is Status after Steps, and nothing else (docs/architecture.md
// §4.9, one write path).
type Write struct {
	// Run is the object Status was computed from: its resourceVersion is
	// the compare-and-swap, its status what the steps compare with.
	Run    *exagentv1.AgentRun
	Status loop.Status
	// Fence, when set, makes the write an owner's (see Store.Commit).
	Fence *loop.Fence
	Now   time.Time
	// Overrides are conditions set over those computed from the status
	// (e.g. Ready=False AgentNotFound).
	Overrides []metav1.Condition
	// Steps shape Status before it is written, in this order
	// (CommitSteps.All, CommitSteps.Unsealed).
	Steps []Step
}

// Step is one transformation of the status about to be written. A step
// does no IO of its own: what must exist before the write (the segments
// the seal moved out) it puts in the draft, and the store creates it.
type Step func(ctx context.Context, d *Draft) error

// Draft is the status a commit is about to write, as the steps shape it.
type Draft struct {
	// Run is the run as read: its status is the one stored now.
	Run    *exagentv1.AgentRun
	Status *loop.Status
	Now    time.Time
	// Segments are created, in order, before the status that references
	// them is written.
	Segments []segment.Segment
}

// Sinks tells the notify step an Agent's notify sinks. It is called only
// when a write makes a notification true, so a write that journals none
// never reads the Agent: a caller that holds the Agent passes
// HeldSinks(agent), the others CommitSteps.AgentSinks.
type Sinks func() []exagentv1.NotifySink

// HeldSinks is the sinks of an Agent the caller read (none when nil).
func HeldSinks(agent *exagentv1.Agent) Sinks {
	return func() []exagentv1.NotifySink {
		if agent == nil {
			return nil
		}
		return agent.Spec.Notify
	}
}

// CommitSteps builds the steps of this manager's status writes. One value
// is shared by every writer (the reconcilers, the notifier, the reaper).
type CommitSteps struct {
	// agents reads an Agent for AgentSinks (the cache).
	agents client.Reader
	// seal is on when transcript segments are written (Setup; off only in
	// tests that build a bare Store).
	seal     bool
	sealOpts SealOptions
	// dropped reports notifications the journal had no room for.
	dropped func(ctx context.Context, run *exagentv1.AgentRun, next *loop.Status, left []notify.Event)
	tracer  *telemetry.Tracer
	holder  string
}

// NewCommitSteps builds the steps of a manager whose store writes
// transcript segments (Store.WithSegments): agents reads an Agent for
// AgentSinks (the cache); tracer and holder set the attempts'
// traceparent.
func NewCommitSteps(agents client.Reader, seal SealOptions, tracer *telemetry.Tracer, holder string) *CommitSteps {
	return &CommitSteps{agents: agents, seal: true, sealOpts: seal, tracer: tracer, holder: holder}
}

// OnDropped makes the notify step report the notifications the journal
// had no room for to f.
func (p *CommitSteps) OnDropped(f func(ctx context.Context, run *exagentv1.AgentRun, next *loop.Status, left []notify.Event)) {
	p.dropped = f
}

// SealOptions are the hot-status budgets (loop.SealConfig without the run).
type SealOptions struct {
	// HotBytes is the target size of a run's encoded status (loop.DefaultHotBytes when 0).
	HotBytes int
	// ValueBytes is the size past which one value is sealed (loop.DefaultValueBytes when 0).
	ValueBytes int
}

// All is the pipeline of a status write: seal the transcript to its hot
// budget, journal the notifications the write makes true, set the
// traceparent of an attempt the write starts.
func (p *CommitSteps) All(sinks Sinks) []Step {
	return []Step{p.Seal, p.Notify(sinks), p.Trace}
}

// Unsealed is All without the seal. It is for writes that must not meet
// a segment refusal again: the commit that ends a run after a segment was
// refused (the status last stored is sealed already, accepted by the
// apiserver, with the run's end added) and the reaper's archive journal
// of an ended run.
func (p *CommitSteps) Unsealed(sinks Sinks) []Step {
	return []Step{p.Notify(sinks), p.Trace}
}

// ValueBytes is the size past which Seal moves one value out of a status:
// what the engine's size checks count as a ref (loop.EnvInput.ValueBytes).
func (p *CommitSteps) ValueBytes() int {
	if p == nil {
		return 0
	}
	return p.sealOpts.ValueBytes
}

// Seal moves what is over the hot budget out of the status into segments
// (loop.Seal). The store creates them before the write that references
// them, so a crash in between leaves only segments nobody references
// (same content, same name next time).
func (p *CommitSteps) Seal(_ context.Context, d *Draft) error {
	if p == nil || !p.seal {
		return nil
	}
	run := d.Run
	sealed, segs, err := loop.Seal(*d.Status, loop.SealConfig{RunName: run.Name, RunUID: string(run.UID),
		HotBytes: p.sealOpts.HotBytes, ValueBytes: p.sealOpts.ValueBytes})
	if err != nil {
		err = fmt.Errorf("sealing the transcript of run %s/%s: %w", run.Namespace, run.Name, err)
		if loop.IsKind(err, loop.KindTooLarge) {
			return &UnstorableError{Reason: exagentv1.ReasonStatusTooLarge, Err: err}
		}
		return err
	}
	*d.Status = sealed
	d.Segments = append(d.Segments, segs...)
	return nil
}

// Notify journals, in the write that makes them true, one Pending record
// per event and sink that wants it, and supersedes what the write settled
// (notify.Journal, the one journaling rule). The notifier delivers them.
func (p *CommitSteps) Notify(sinks Sinks) Step {
	return func(ctx context.Context, d *Draft) error {
		var have []exagentv1.NotifySink
		if sinks != nil && len(notify.Transitions(&d.Run.Status, d.Status)) > 0 {
			have = sinks()
		} // else: an approval not marked notified is still due, and the notifier journals it
		left := notify.Journal(&d.Run.Status, d.Status, string(d.Run.UID), have, d.Now)
		if p != nil && p.dropped != nil && len(left) > 0 {
			p.dropped(ctx, d.Run, d.Status, left)
		}
		return nil
	}
}

// Trace sets the traceparent of the attempt the write starts
// (Tracer.SetTraceparent); the attempt's spans follow the write.
func (p *CommitSteps) Trace(_ context.Context, d *Draft) error {
	if p != nil {
		p.tracer.SetTraceparent(&d.Run.Status, d.Status, p.holder)
	}
	return nil
}

// AgentSinks is the Sinks of the Agent run names, read from the cache
// only when the write journals a notification. An Agent that cannot be
// read has none: an approval not marked notified stays due, and the
// notifier journals it.
func (p *CommitSteps) AgentSinks(ctx context.Context, run *exagentv1.AgentRun) Sinks {
	return func() []exagentv1.NotifySink {
		if p == nil || p.agents == nil {
			return nil
		}
		agent := &exagentv1.Agent{}
		key := types.NamespacedName{Namespace: run.Namespace, Name: run.Spec.AgentRef.Name}
		if err := p.agents.Get(ctx, key, agent); err != nil {
			if !errors.Is(err, context.Canceled) {
				logf.FromContext(ctx).V(1).Info("notify sinks unknown: the Agent could not be read", "agent", key.Name, "error", err.Error())
			}
			return nil
		}
		return agent.Spec.Notify
	}
}

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

	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/segment"
	"github.com/exagent-io/exagent/loop"
	"github.com/exagent-io/exagent/store"
)

// Hooks are named points of the tool-call path where a test can stop the
// process (cancel the manager's context) to reproduce a crash in an exact
// window, with no timing tricks. After a hook returns, the controller
// checks its context and does nothing more when it was cancelled. Nil
// hooks are skipped; production leaves them all nil.
//
// The hooks of a job (BeforeModelRequest, AfterModelResponse, AfterEffect,
// BeforeChildCreate, AfterChildCreated) get the job's context, which the
// manager's stop ends a moment after the manager's own context (at once,
// or after the drain): a test that stops the manager there waits for the
// job's context to end before it returns, or the job may still file its
// result.
type Hooks struct {
	// BeforeIntentCommit runs before the commit that records tool intents.
	BeforeIntentCommit func(ctx context.Context, run types.NamespacedName, calls []loop.ToolInvocation)
	// AfterIntentCommit runs after that commit and before any call is dispatched.
	AfterIntentCommit func(ctx context.Context, run types.NamespacedName, calls []loop.ToolInvocation)
	// AfterEffect runs when a tool returned, before its result is handed to the owner.
	AfterEffect func(ctx context.Context, run types.NamespacedName, result loop.ToolResult)
	// BeforeModelRequest runs when a model request's job starts: its intent
	// is committed and nothing has been sent yet.
	BeforeModelRequest func(ctx context.Context, run types.NamespacedName)
	// AfterModelResponse runs when a model request returned (answer or
	// error), before its result is handed to the owner.
	AfterModelResponse func(ctx context.Context, run types.NamespacedName)
	// AfterSegmentsCreated runs when a commit's segments were created, before
	// the commit that references them.
	AfterSegmentsCreated func(ctx context.Context, run types.NamespacedName, segs []segment.Segment)
	// BeforeChildCreate runs when a delegation call's child is about to be
	// created: the Create is sent after it even if the parent's claim was
	// lost meanwhile (a request on the wire is not called back).
	BeforeChildCreate func(ctx context.Context, run types.NamespacedName, child string)
	// AfterChildCreated runs when a delegation call's child run exists,
	// before the parent's commit that records it.
	AfterChildCreated func(ctx context.Context, run types.NamespacedName, child string)
	// BeforeChildOutcomeCommit runs before the commit that records a child
	// run's end in its parent (the call's outcome and the usage charged).
	BeforeChildOutcomeCommit func(ctx context.Context, run types.NamespacedName)
	// BeforeNotify runs before a notification delivery attempt.
	BeforeNotify func(ctx context.Context, run types.NamespacedName, rec exagentv1.NotificationRecord)
	// BeforeArchiveJournal runs when an attempt to send a run's archive
	// returned (sent is nil after the sink's 2xx), before the attempt is
	// journaled. An error it returns abandons the work right there, as a
	// crash would: nothing is journaled and nothing deleted, and the run
	// is archived again (same id) when retention comes back to it.
	BeforeArchiveJournal func(ctx context.Context, run types.NamespacedName, sent error) error
	// BeforeStatusWrite runs right before a run's status is written, on the
	// very status sent: a test may make it one the apiserver refuses.
	BeforeStatusWrite func(ctx context.Context, run types.NamespacedName, status *exagentv1.AgentRunStatus)
	// AgentChecked runs after each check of an Agent, with whether its
	// status was written.
	AgentChecked func(agent types.NamespacedName, wrote bool)
}

func (h Hooks) agentChecked(agent types.NamespacedName, wrote bool) {
	if h.AgentChecked != nil {
		h.AgentChecked(agent, wrote)
	}
}

func (h Hooks) beforeIntentCommit(ctx context.Context, run types.NamespacedName, calls []loop.ToolInvocation) {
	if h.BeforeIntentCommit != nil && len(calls) > 0 {
		h.BeforeIntentCommit(ctx, run, calls)
	}
}

func (h Hooks) afterIntentCommit(ctx context.Context, run types.NamespacedName, calls []loop.ToolInvocation) {
	if h.AfterIntentCommit != nil && len(calls) > 0 {
		h.AfterIntentCommit(ctx, run, calls)
	}
}

func (h Hooks) afterEffect(ctx context.Context, run types.NamespacedName, r loop.ToolResult) {
	if h.AfterEffect != nil {
		h.AfterEffect(ctx, run, r)
	}
}

func (h Hooks) beforeModelRequest(ctx context.Context, run types.NamespacedName) {
	if h.BeforeModelRequest != nil {
		h.BeforeModelRequest(ctx, run)
	}
}

func (h Hooks) afterModelResponse(ctx context.Context, run types.NamespacedName) {
	if h.AfterModelResponse != nil {
		h.AfterModelResponse(ctx, run)
	}
}

func (h Hooks) beforeChildCreate(ctx context.Context, run types.NamespacedName, child string) {
	if h.BeforeChildCreate != nil {
		h.BeforeChildCreate(ctx, run, child)
	}
}

func (h Hooks) afterChildCreated(ctx context.Context, run types.NamespacedName, child string) {
	if h.AfterChildCreated != nil {
		h.AfterChildCreated(ctx, run, child)
	}
}

func (h Hooks) beforeChildOutcomeCommit(ctx context.Context, run types.NamespacedName) {
	if h.BeforeChildOutcomeCommit != nil {
		h.BeforeChildOutcomeCommit(ctx, run)
	}
}

// store is the write path's share of the hooks.
func (h Hooks) store() store.Hooks {
	return store.Hooks{BeforeStatusWrite: h.BeforeStatusWrite, AfterSegmentsCreated: h.AfterSegmentsCreated}
}

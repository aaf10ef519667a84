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
	"time"

	"k8s.io/apimachinery/pkg/types"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
	"github.com/exagent-io/exagent/internal/telemetry"
	"github.com/exagent-io/exagent/loop"
)

// commitObserver is what every status write tells the rest of the
// process, in the one place all writes go through (Store.Commit): before
// the write, the notifications the commit makes true are journaled in it
// and a new trace's traceparent is set (Tracer.SetTraceparent); after it landed, the metrics
// and the attempt spans follow it.
type commitObserver struct {
	notifier *notifier
	tracer   *telemetry.Tracer
	holder   string
}

func (s *Store) beforeWrite(ctx context.Context, run *exagentv1.AgentRun, next *loop.Status, now time.Time) {
	o := s.observer
	if o == nil {
		return
	}
	if o.notifier != nil {
		o.notifier.journalTransitions(ctx, run, next, now)
	}
	o.tracer.SetTraceparent(&run.Status, next, o.holder)
}

func (s *Store) afterWrite(old, written *exagentv1.AgentRun, now time.Time) {
	observeCommit(old, written, now)
	if o := s.observer; o != nil {
		o.tracer.Committed(types.NamespacedName{Namespace: written.Namespace, Name: written.Name}, written.Spec.AgentRef.Name,
			&old.Status, &written.Status, o.holder, now)
	}
}

// endChat ends a chat span with the response's token usage.
func endChat(end telemetry.End, resp *loop.ModelResponse, err error) {
	switch {
	case err != nil:
		end("Failed", err)
	case resp != nil:
		end("Succeeded", nil, telemetry.Tokens(resp.PromptTokens, resp.CompletionTokens)...)
	default:
		end("Failed", nil)
	}
}

// toolKind is the GenAI tool type of a tool: its implementation kind.
func toolKind(spec *exagentv1.ToolSpec) string {
	if spec == nil {
		return "unknown"
	}
	return spec.Kind()
}

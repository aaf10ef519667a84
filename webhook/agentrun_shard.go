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

package webhook

import (
	"context"
	"fmt"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/shard"
)

// stampShard labels a new run with the shard that serves it
// (exagent.io/shard, docs/install.md "Scaling out"), overwriting whatever a
// client wrote: where a run is served is the platform team's choice
// (--shards, a Namespace's pin), never its author's. A child run keeps
// the label the manager copied from its parent — a tree is served by one
// shard — and every other run is placed by its root key: a conversation's
// turns with their conversation, a schedule's or a trigger's runs with it
// (shard.RootKey). Without --shards nothing is stamped.
func (w *AgentRunWebhook) stampShard(ctx context.Context, run *exagentv1.AgentRun, creator exagentv1.Actor) error {
	if !w.Placer.Enabled() {
		return nil
	}
	key := shard.RootKey(run)
	if d := run.Spec.Delegation; d != nil {
		if w.Manager != "" && creator.Username == w.Manager && run.Labels[exagentv1.LabelShard] != "" {
			return nil
		}
		key = "AgentRun/" + d.Root.Name // a manager that copies no label (an older one in a rollout)
	}
	p, err := w.Placer.Place(ctx, run.Namespace, key)
	if err != nil {
		return kerrors.NewInternalError(fmt.Errorf("placing AgentRun %s/%s on a shard: %w", run.Namespace, run.Name, err))
	}
	if p.Pinned && !w.Placer.Shards.Has(p.Shard) {
		logf.FromContext(ctx).Info("namespace pins a shard outside --shards: only a manager started with --shard for it serves its runs",
			"namespace", run.Namespace, "shard", p.Shard, "shards", w.Placer.Shards.String())
	}
	if run.Labels == nil {
		run.Labels = map[string]string{}
	}
	run.Labels[exagentv1.LabelShard] = p.Shard
	return nil
}

// stampDecisionShard labels a decision with its run's shard, so that the
// manager serving the run is the one that applies it; a decision for a
// run without one carries none (whatever a client wrote is dropped).
func stampDecisionShard(d *exagentv1.ApprovalDecision, run *exagentv1.AgentRun) {
	if v, ok := run.Labels[exagentv1.LabelShard]; ok {
		if d.Labels == nil {
			d.Labels = map[string]string{}
		}
		d.Labels[exagentv1.LabelShard] = v
		return
	}
	delete(d.Labels, exagentv1.LabelShard)
}

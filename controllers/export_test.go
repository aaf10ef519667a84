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
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/exagent-io/exagent/loop"
)

// NewRunsCollector is the run gauges' collector over reader, for tests
// that read the gauges of their own namespace (the process registers one
// collector only, over the first manager's cache).
func NewRunsCollector(reader client.Reader) prometheus.Collector {
	return runsCollector{reader: reader}
}

// FileOlderRunsAnswer files a model answer for the run named key as a job
// of another run of that name (uid) would have, under fence: the results
// of a run deleted and re-created meanwhile, whose attempts count from 1
// again.
func (r *AgentRunReconciler) FileOlderRunsAnswer(key types.NamespacedName, uid types.UID, fence loop.Fence, content string) {
	r.mem.inbox.started(key, 1)
	r.mem.inbox.deliver(key, ioResult{uid: uid, fence: fence, model: &loop.ModelResponse{Content: content}})
}

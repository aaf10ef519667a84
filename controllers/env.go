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
	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/loop"
)

// envConfig is what every engine view of a run (loop.Env) this manager
// builds shares, whichever controller builds it: the reconcile, the
// hand-back at the stop, a decision, late outcomes and a child's
// withdrawal all count sizes and cap transcripts alike.
type envConfig struct {
	// valueBytes is the store's seal threshold, which the engine's size
	// checks count by (loop.EnvInput.ValueBytes).
	valueBytes int
	// maxTranscriptBytes is --max-transcript-bytes (0: no cap beyond the Agent's).
	maxTranscriptBytes int64
	// callbacks makes NewCallback's URLs (nil: the manager serves none).
	callbacks *loop.CallbackIssuer
}

// envExtras are what only the paths that admit or begin calls supply.
type envExtras struct {
	// mcp are the MCP servers' listings by tool name (loop.EnvInput.MCP).
	mcp map[string]*loop.MCPListing
	// childLimits are the delegated Agents' limits (loop.EnvInput.ChildLimits).
	childLimits map[string]exagentv1.LimitsSpec
	// waitsRefused is why the run may begin no wait now (loop.EnvInput.WaitsRefused).
	waitsRefused string
}

// env is the engine's view of run under agent as read now. With no agent
// an empty Agent stands in: for what needs only the run's own spec
// (ending it, its late outcomes, withdrawing its children, a Cancel
// whatever state its Agent is in).
func (c envConfig) env(run *exagentv1.AgentRun, agent *exagentv1.Agent, x envExtras) (*loop.Env, error) {
	in := loop.EnvInput{
		RunUID: string(run.UID), RunName: run.Name, RunNamespace: run.Namespace, Run: &run.Spec, Agent: &exagentv1.AgentSpec{},
		ValueBytes: c.valueBytes, MaxTranscriptBytes: c.maxTranscriptBytes,
		MCP: x.mcp, ChildLimits: x.childLimits, WaitsRefused: x.waitsRefused,
		// The limits the run journaled bound it as much as its Agent's
		// current ones: an Agent edit narrows a run, never widens it.
		Limits:    run.Status.Limits,
		Callbacks: c.callbacks,
	}
	if agent != nil {
		in.Agent, in.AgentGeneration = &agent.Spec, agent.Generation
	}
	return loop.NewEnv(in)
}

// envConfig is the run controller's share of every Env.
func (r *AgentRunReconciler) envConfig() envConfig {
	return envConfig{valueBytes: r.Steps.ValueBytes(), maxTranscriptBytes: r.MaxTranscriptBytes, callbacks: r.Callbacks}
}

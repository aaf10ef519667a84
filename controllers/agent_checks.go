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
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/mcplist"
	"github.com/exagent-io/exagent/loop"
	"github.com/exagent-io/exagent/model"
	"github.com/exagent-io/exagent/tools"
)

// agentScope is what one check of an Agent knows and finds. The checks
// fill it; only Reconcile writes the status it leads to.
type agentScope struct {
	key   types.NamespacedName
	now   time.Time
	agent *exagentv1.Agent
	// secrets are the Secrets this check read (each at most once).
	secrets *secretReads
	found   agentFindings
	// soonest, when set, is when something a check waits for may have
	// changed (agentRecheck).
	soonest time.Duration
}

// agentCheck is the one signature of the Agent checks. An error is
// transient (the apiserver did not answer): the check is retried with
// backoff and nothing is written.
type agentCheck func(ctx context.Context, sc *agentScope) error

func (sc *agentScope) fail(where, reason, message string) {
	sc.found.problems = append(sc.found.problems, agentProblem{where: where, reason: reason, message: message})
}

func (sc *agentScope) waitAtMost(d time.Duration) {
	if d > 0 && (sc.soonest == 0 || d < sc.soonest) {
		sc.soonest = d
	}
}

// checkConfig evaluates what a run's Env evaluates of the Agent itself
// (policy CEL, limits' durations) with the tools left out: they are
// checked one by one, so that each gets its own status.
func (r *AgentReconciler) checkConfig(_ context.Context, sc *agentScope) error {
	spec := sc.agent.Spec.DeepCopy()
	spec.Tools = nil
	if _, err := loop.NewEnv(loop.EnvInput{RunUID: "agent-check", Agent: spec, Run: &exagentv1.AgentRunSpec{}}); err != nil {
		sc.fail("spec", exagentv1.ReasonInvalidConfiguration, strings.TrimPrefix(err.Error(), "env: "))
	}
	return nil
}

// checkModel reads the Secrets the model names — its API key, its
// headers' values, its CA bundle (which must hold PEM certificates) — as
// a request would (a Scripted model names none).
func (r *AgentReconciler) checkModel(ctx context.Context, sc *agentScope) error {
	m := &sc.agent.Spec.Model
	switch m.Provider {
	case exagentv1.ModelProviderScripted:
		return nil
	case exagentv1.ModelProviderOpenAI, exagentv1.ModelProviderAnthropic:
	case exagentv1.ModelProviderBedrock:
		if m.Region == "" {
			sc.fail("model (region)", exagentv1.ReasonInvalidConfiguration,
				"provider Bedrock needs spec.model.region, the model's AWS region: runs fail before any request until it is set")
			return nil
		}
	default:
		sc.fail("model (provider)", exagentv1.ReasonInvalidConfiguration, fmt.Sprintf(
			"provider %q is not one this manager speaks (OpenAI, Anthropic, Bedrock, Scripted): runs fail before any request", m.Provider))
		return nil
	}
	type ref struct {
		where string
		sel   exagentv1.SecretKeySelector
	}
	var refs []ref
	if m.APIKeySecretRef != nil {
		refs = append(refs, ref{"model (apiKeySecretRef)", *m.APIKeySecretRef})
	}
	for i, h := range m.Headers {
		refs = append(refs, ref{fmt.Sprintf("model (headers[%d] %s)", i, h.Name), h.ValueFrom})
	}
	if m.CABundleSecretRef != nil {
		refs = append(refs, ref{"model (caBundleSecretRef)", *m.CABundleSecretRef})
	}
	for _, rf := range refs {
		reason, msg, err := sc.secrets.check(ctx, rf.sel)
		if err != nil {
			return err
		}
		if reason != "" {
			sc.fail(rf.where, reason, msg)
			return nil
		}
	}
	if ca := m.CABundleSecretRef; ca != nil {
		pem, err := sc.secrets.value(ctx, sc.key.Namespace, *ca)
		if err != nil {
			return err
		}
		if _, err := model.ParseCABundle([]byte(pem)); err != nil {
			sc.fail("model (caBundleSecretRef)", exagentv1.ReasonInvalidConfiguration,
				fmt.Sprintf("Secret %q key %q %v: put the PEM certificates of the CAs to trust there", ca.Name, ca.Key, err))
		}
	}
	return nil
}

// checkNotify reads each notification sink's signing Secret.
func (r *AgentReconciler) checkNotify(ctx context.Context, sc *agentScope) error {
	type signed struct {
		what, name string
		ref        *exagentv1.SecretKeySelector
	}
	var sinks []signed
	for _, s := range sc.agent.Spec.Notify {
		sinks = append(sinks, signed{"notify sink", s.Name, s.SigningSecretRef})
	}
	if a := sc.agent.Spec.Retention.Archive; a != nil {
		// An archive whose signing key is missing would hold every ended
		// run of the Agent (it is deleted only once archived).
		sinks = append(sinks, signed{"retention archive", a.Name, a.SigningSecretRef})
	}
	for _, s := range sinks {
		if s.ref == nil {
			continue
		}
		reason, msg, err := sc.secrets.check(ctx, *s.ref)
		if err != nil {
			return err
		}
		if reason != "" {
			sc.fail(fmt.Sprintf("%s %q (signingSecretRef)", s.what, s.name), reason, msg)
		}
	}
	return nil
}

// checkTools checks each tool, in spec order, and records its status;
// a tool that fails fails the Agent with its reason.
func (r *AgentReconciler) checkTools(ctx context.Context, sc *agentScope) error {
	specs := sc.agent.Spec.Tools
	if len(specs) > exagentv1.MaxAgentTools {
		specs = specs[:exagentv1.MaxAgentTools] // admission bounds them; an older object is not trusted to be
	}
	for i := range specs {
		t := &specs[i]
		st := exagentv1.AgentToolStatus{Name: t.Name, Kind: t.Kind(), Ready: true}
		reason, msg, err := r.checkTool(ctx, sc, t)
		if err != nil {
			return err
		}
		switch reason {
		case "":
			st.Message = msg
		case exagentv1.ReasonChecking: // not failed: sc.found.checking says what is under way
			st.Ready, st.Reason, st.Message = false, reason, msg
		default:
			st.Ready, st.Reason, st.Message = false, reason, msg
			sc.fail(fmt.Sprintf("tool %q", t.Name), reason, msg)
		}
		sc.found.tools = append(sc.found.tools, st)
	}
	return nil
}

// checkTool is one tool's checks, first failure first: its kind, the
// Secrets of its headers, then what its kind needs. A ready tool may
// return a message (what its MCP server offers); one whose check is under
// way returns ReasonChecking.
func (r *AgentReconciler) checkTool(ctx context.Context, sc *agentScope, t *exagentv1.ToolSpec) (reason, message string, err error) {
	if err := tools.Supported(t); err != nil {
		return exagentv1.ReasonToolKindNotSupported, err.Error(), nil
	}
	var headers []exagentv1.SecretHeader
	switch {
	case t.HTTP != nil:
		headers = t.HTTP.Headers
	case t.MCP != nil:
		headers = t.MCP.Headers
	}
	for _, h := range headers {
		reason, msg, err := sc.secrets.check(ctx, h.ValueFrom)
		if err != nil || reason != "" {
			return reason, fmt.Sprintf("header %s: %s", h.Name, msg), err
		}
	}
	if t.MCP != nil {
		reason, message = r.checkMCP(ctx, sc, t)
		return reason, message, nil
	}
	if err := loop.CheckToolParameters(t); err != nil {
		return exagentv1.ReasonInvalidSchema, "parameters: " + err.Error(), nil
	}
	if t.Agent != nil {
		return r.checkDelegate(ctx, sc, t.Agent.AgentRef.Name)
	}
	return "", "", nil
}

// checkDelegate finds the Agent a delegation tool hands work to (from the
// cache: Agents are watched anyway, and its creation wakes this Agent).
func (r *AgentReconciler) checkDelegate(ctx context.Context, sc *agentScope, name string) (reason, message string, err error) {
	err = r.Client.Get(ctx, types.NamespacedName{Namespace: sc.key.Namespace, Name: name}, &exagentv1.Agent{})
	switch {
	case apierrors.IsNotFound(err):
		return exagentv1.ReasonDelegateNotFound, fmt.Sprintf("delegates to Agent %q, which does not exist in namespace %q: "+
			"its calls would fail; create that Agent or fix agentRef", name, sc.key.Namespace), nil
	case err != nil:
		return "", "", fmt.Errorf("getting delegate Agent %s: %w", name, err)
	}
	return "", "", nil
}

// checkMCP asks the MCP catalog (internal/mcplist: bounded, per-tenant
// fair, cached, never on this worker) for the tool's server listing and
// checks what the tool names against it as a run would. A listing older
// than half the recheck interval is refreshed (the Agent is woken when it
// comes back); meanwhile the last one stands. A first listing still under
// way leaves the tool checking (reason Checking; the Agent's Ready is
// Unknown when nothing else failed).
func (r *AgentReconciler) checkMCP(ctx context.Context, sc *agentScope, t *exagentv1.ToolSpec) (reason, message string) {
	reg := &tools.Registry{MCP: r.MCP, Secret: sc.secrets.value}
	need := tools.MCPNeed{After: sc.now.Add(-r.Recheck / 2),
		Waiter: mcplist.Waiter{Kind: tools.WaiterAgent, NamespacedName: sc.key}}
	listings, waits := reg.MCPListings(ctx, sc.key.Namespace, &exagentv1.AgentSpec{Tools: []exagentv1.ToolSpec{*t}}, need)
	var st mcplist.State
	if len(waits) > 0 {
		st = waits[0].State
	}
	bounds := r.MCP.Bounds()
	switch {
	case st.Pending:
		sc.waitAtMost(bounds.Timeout + time.Second) // the wake comes sooner; this backs it up
	case !st.RetryAt.IsZero():
		sc.waitAtMost(max(st.RetryAt.Sub(sc.now), 0) + 20*time.Millisecond) // the server's backoff ends
	}
	switch {
	case errors.Is(st.Err, mcplist.ErrFull):
		sc.waitAtMost(mcpRetry) // the catalog is busy: not the server's fault
		sc.found.checking = append(sc.found.checking, fmt.Sprintf("tool %q: tools/list of %s", t.Name, t.MCP.URL))
		return exagentv1.ReasonChecking, "waiting for a free MCP listing slot"
	case st.Err != nil:
		return exagentv1.ReasonMCPServerUnavailable, fmt.Sprintf("%v (asked again with backoff, at most %s apart)", st.Err, bounds.BackoffCap)
	}
	l := listings[t.Name]
	if l == nil {
		sc.found.checking = append(sc.found.checking, fmt.Sprintf("tool %q: tools/list of %s", t.Name, t.MCP.URL))
		return exagentv1.ReasonChecking, "tools/list of " + t.MCP.URL + " under way"
	}
	return mcpVerdict(t, l)
}

// mcpVerdict is what the tool's listing says of it: every tool it names
// offered with a usable schema, or the first thing that is not.
func mcpVerdict(t *exagentv1.ToolSpec, l *loop.MCPListing) (reason, message string) {
	c := loop.CheckMCPTool(t, l)
	switch {
	case len(c.Missing) > 0:
		return exagentv1.ReasonMCPToolNotFound, fmt.Sprintf("the MCP server %s does not offer %s (it lists %d tools); "+
			"calls of it fail ToolUnavailable: fix the tool name or the server", t.MCP.URL, quoteNames(c.Missing), len(l.Tools))
	case len(c.BadSchemas) > 0:
		p := c.BadSchemas[0]
		return exagentv1.ReasonInvalidSchema, fmt.Sprintf("the MCP server %s lists tool %q with an input schema exagent cannot use: %v",
			t.MCP.URL, p.Tool, p.Err)
	case len(c.Usable) == 0:
		return exagentv1.ReasonMCPToolNotFound, fmt.Sprintf("the MCP server %s lists no tool the import can use (it lists %d)", t.MCP.URL, len(l.Tools))
	case t.MCP.Import != nil:
		return "", fmt.Sprintf("imports %s from %s", quoteNames(c.Usable), t.MCP.URL)
	}
	return "", ""
}

// quoteNames lists names, at most 8 of them.
func quoteNames(names []string) string {
	const most = 8
	q := make([]string, 0, min(len(names), most))
	for _, n := range names[:min(len(names), most)] {
		q = append(q, fmt.Sprintf("%q", n))
	}
	s := strings.Join(q, ", ")
	if len(names) > most {
		s += fmt.Sprintf(" and %d more", len(names)-most)
	}
	return s
}

// secretReads reads the Secrets one check needs, past the cache (the
// manager never caches or watches Secrets cluster-wide: docs/architecture.md §8) and
// each at most once, and at most exagentv1.MaxAgentSecretReads of them:
// an Agent naming a thousand Secrets costs a bounded number of GETs.
// It lives for one check; values never outlive it.
type secretReads struct {
	reader    client.Reader
	namespace string
	read      map[string]secretRead
}

type secretRead struct {
	data map[string][]byte
	err  error // NotFound, Forbidden; nil when read
}

func newSecretReads(reader client.Reader, namespace string) *secretReads {
	return &secretReads{reader: reader, namespace: namespace, read: map[string]secretRead{}}
}

// check says whether sel's Secret exists and holds its key: a reason and
// message when not, an error when the apiserver could not say.
func (s *secretReads) check(ctx context.Context, sel exagentv1.SecretKeySelector) (reason, message string, err error) {
	name := fmt.Sprintf("Secret %q", sel.Name)
	got, ok := s.read[sel.Name]
	if !ok {
		if len(s.read) >= exagentv1.MaxAgentSecretReads {
			return exagentv1.ReasonTooManySecrets, fmt.Sprintf("%s not checked: the Agent names more than %d distinct Secrets, "+
				"the most one check reads", name, exagentv1.MaxAgentSecretReads), nil
		}
		sec := &corev1.Secret{}
		err := s.reader.Get(ctx, types.NamespacedName{Namespace: s.namespace, Name: sel.Name}, sec)
		switch {
		case err == nil:
			got = secretRead{data: sec.Data}
		case apierrors.IsNotFound(err), apierrors.IsForbidden(err):
			got = secretRead{err: err}
		default:
			return "", "", fmt.Errorf("reading Secret %s/%s: %w", s.namespace, sel.Name, err)
		}
		s.read[sel.Name] = got
	}
	switch {
	case apierrors.IsNotFound(got.err):
		return exagentv1.ReasonSecretNotFound, fmt.Sprintf("%s does not exist in namespace %q", name, s.namespace), nil
	case got.err != nil:
		return exagentv1.ReasonSecretNotReadable, fmt.Sprintf("the manager may not read %s in namespace %q (%v): "+
			"runs cannot either; is the namespace one the manager serves?", name, s.namespace, got.err), nil
	}
	if _, ok := got.data[sel.Key]; !ok {
		// Not the keys it has: whoever reads the Agent may not read Secrets.
		return exagentv1.ReasonSecretKeyNotFound, fmt.Sprintf("%s in namespace %q has no key %q", name, s.namespace, sel.Key), nil
	}
	return "", "", nil
}

// value is a tools.SecretGetter over the Secrets read (MCP headers).
func (s *secretReads) value(ctx context.Context, _ string, sel exagentv1.SecretKeySelector) (string, error) {
	reason, msg, err := s.check(ctx, sel)
	switch {
	case err != nil:
		return "", err
	case reason != "":
		return "", errors.New(msg)
	}
	return string(s.read[sel.Name].data[sel.Key]), nil
}

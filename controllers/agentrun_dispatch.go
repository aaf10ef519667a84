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
	"net/url"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/event"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/bounded"
	"github.com/exagent-io/exagent/internal/egress"
	"github.com/exagent-io/exagent/internal/executor"
	"github.com/exagent-io/exagent/internal/secrets"
	"github.com/exagent-io/exagent/loop"
	"github.com/exagent-io/exagent/model"
	"github.com/exagent-io/exagent/tools"
)

// dispatch hands the committed action's IO to the executor. It is called
// only after the commit that recorded the intent succeeded.
func (r *AgentRunReconciler) dispatch(sc *scope) {
	switch sc.action.Kind {
	case loop.ActCallModel:
		r.dispatchModel(sc, *sc.action.Model)
	case loop.ActRunTools:
		for _, call := range sc.action.Calls {
			r.dispatchTool(sc, call)
		}
	}
}

// errActiveTimeUp is the cause of an IO's context the run's active-time
// balance ran out on (activeBound).
var errActiveTimeUp = errors.New("the run's active time ran out")

// activeBound is when the run's active-time balance runs out for the IO
// dispatched now; zero when the run has no active-time limit. The engine
// says what is left of the owner's reservation (loop.ActiveTimeLeft);
// the time a job waits in the executor is owned time too, so the bound
// is an instant, not a duration from the job's start.
func (r *AgentRunReconciler) activeBound(sc *scope) time.Time {
	left, ok := loop.ActiveTimeLeft(sc.status, sc.env, r.Clock.Now())
	if !ok {
		return time.Time{}
	}
	return r.Clock.Now().Add(left)
}

// boundActive is ctx cut at the instant at (activeBound; none when zero),
// by the reconciler's clock, with cause errActiveTimeUp: a model request
// or tool call started near the end of the balance does not run past it.
// A tool call cut after its request was sent has an unknown outcome like
// any other broken call — Uncertain (docs/architecture.md §4.7): an
// idempotent tool is not re-sent either, as no active time is left to
// re-send it in. stop releases the timer.
func (r *AgentRunReconciler) boundActive(ctx context.Context, at time.Time) (bounded context.Context, stop func()) {
	if at.IsZero() {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	cut := func() { cancel(errActiveTimeUp) }
	d := at.Sub(r.Clock.Now())
	if d <= 0 {
		cut()
		return ctx, func() {}
	}
	var t interface{ Stop() bool }
	if c, ok := r.Clock.(clock.WithDelayedExecution); ok {
		t = c.AfterFunc(d, cut)
	} else {
		t = time.AfterFunc(d, cut)
	}
	return ctx, func() { t.Stop(); cancel(nil) }
}

// cutByActiveTime says what the model (or the run's message) is told
// about an IO the run's active time cut.
func cutByActiveTime(ctx context.Context) (string, bool) {
	if !errors.Is(context.Cause(ctx), errActiveTimeUp) {
		return "", false
	}
	return "cut when the run's active time ran out (limits.activeTime / spec.activeTimeLimit)", true
}

func (r *AgentRunReconciler) dispatchModel(sc *scope, req loop.ModelRequest) {
	ns := sc.key.Namespace
	spec := sc.agent.Spec.Model.DeepCopy()
	key := sc.key
	attempt := sc.fence.Attempt
	// A rate limit's wait is told to the run's condition (model_waits.go);
	// the life of the wake-up is the manager's, not the job's.
	waiting := r.rateLimitWaiter(r.lifeOrBackground(), key, attempt)
	budget := r.waitBudget(sc, waiting)
	opts := r.ModelOptions
	opts.AgentLimits = sc.agent.Spec.Limits.DeepCopy()
	// The Agent's shared model.rateLimit admits the job before it takes an
	// executor slot (internal/executor Task.Admit); its permit charges the
	// answer's tokens when the job is done.
	var used int64
	var admit func(context.Context) (func(), error)
	if rl := spec.RateLimit; rl != nil && r.ModelOptions.Limiter != nil {
		lkey := ns + "/" + sc.agent.Name
		admit = func(ctx context.Context) (func(), error) {
			p, err := r.ModelOptions.Limiter.Admit(ctx, lkey, *rl, waiting)
			if err != nil {
				return nil, err
			}
			return func() { p.Done(used) }, nil
		}
	}
	activeEnd := r.activeBound(sc)
	r.submitAdmitted(sc, modelEndpoint(spec), "", admit, func(ctx context.Context) ioResult {
		ctx, stop := r.boundActive(ctx, activeEnd)
		defer stop()
		r.Hooks.beforeModelRequest(ctx, key)
		ctx, end := r.Tracer.StartChat(ctx, key, attempt, spec.Provider, spec.Name) // chat span
		var res ioResult
		p, err := model.For(ctx, spec, func(ctx context.Context, sel exagentv1.SecretKeySelector) (string, error) {
			return r.secret(ctx, ns, sel)
		}, opts)
		if err == nil {
			var resp loop.ModelResponse
			if resp, err = p.Complete(model.WithWaitBudget(ctx, budget), req); err == nil {
				resp.PriorCallIDs = priorCallIDs(req.Messages)
				res.model = &resp
				used = resp.PromptTokens + resp.CompletionTokens
			}
		}
		if why, cut := cutByActiveTime(ctx); cut && err != nil {
			err = fmt.Errorf("%s: %w", why, err)
		}
		res.modelErr = err
		observeModelRequest(spec.Provider, res.model, err) // metrics (controllers/metrics.go)
		endChat(end, res.model, err)                       // chat span
		r.Hooks.afterModelResponse(ctx, key)
		return res
	})
}

func (r *AgentRunReconciler) dispatchTool(sc *scope, inv loop.ToolInvocation) {
	key := sc.key
	// The env's spec: for a tool an mcp import brings in, the import's
	// spec narrowed to that tool (the Agent has no entry of that name).
	spec := sc.env.ToolSpec(inv.Tool)
	if spec != nil && spec.Agent != nil {
		r.dispatchDelegation(sc, inv) // agentrun_delegate.go
		return
	}
	call := tools.Call{
		ToolInvocation: inv,
		RunNamespace:   sc.run.Namespace,
		RunName:        sc.run.Name,
		RunUID:         string(sc.run.UID),
		ServiceAccount: sc.run.Spec.ServiceAccount(),
	}
	if sa := call.ServiceAccount; sc.run.Spec.Delegation != nil && !sc.agent.Spec.AllowsInheritedServiceAccount(sa) {
		// The child's current Agent, asked again where its builtins act
		// (agentrun_delegate.go asked before the child was created).
		call.ServiceAccountRefusal = inheritedServiceAccountRefusal(sc.run.Namespace, sa, sc.agent.Name)
	}
	attempt := sc.fence.Attempt
	activeEnd := r.activeBound(sc)
	r.submit(sc, toolEndpoint(spec), inv.CallID, func(ctx context.Context) ioResult {
		ctx, stop := r.boundActive(ctx, activeEnd)
		defer stop()
		ctx, end := r.Tracer.StartTool(ctx, key, attempt, inv.Tool, toolKind(spec), inv.CallID) // execute_tool span
		out := r.Tools.Invoke(ctx, spec, call)
		if why, cut := cutByActiveTime(ctx); cut && out.Kind != loop.ResultSucceeded {
			out.Output = why + ": " + out.Output
		}
		observeToolCall(inv.Tool, out.Kind) // metrics (controllers/metrics.go)
		end(string(out.Kind), nil)          // execute_tool span
		r.Hooks.afterEffect(ctx, key, out)
		return ioResult{tool: &out}
	})
}

// submit hands one job of the committed intent to the executor. At the
// moment the job would start it checks that the run still exists with
// the same UID and that the claim it was dispatched under still holds
// with startMargin of lease left; otherwise it does not start (a lease
// too short is this process's own: the intent is taken back and begun
// again; anything else is a claim this process lost). Losing the
// run or its claim cancels the job's context.
func (r *AgentRunReconciler) submit(sc *scope, endpoint, callID string, job func(ctx context.Context) ioResult) {
	r.submitAdmitted(sc, endpoint, callID, nil, job)
}

// submitAdmitted is submit with an admission (executor.Task.Admit) the job
// waits in before it takes any executor slot.
func (r *AgentRunReconciler) submitAdmitted(sc *scope, endpoint, callID string, admit func(context.Context) (func(), error),
	job func(ctx context.Context) ioResult) {
	key, uid, fence := sc.key, sc.run.UID, *sc.fence
	margin := startMargin(sc.env.LeaseDuration())
	r.mem.inbox.started(key, 1)
	r.Executor.Go(executor.Task{
		Admit:    admit,
		Endpoint: endpoint,
		// The run's namespace picks its egress allow-list for every
		// request of the job (model, tool, MCP).
		Ctx: egress.WithNamespace(r.mem.claims.context(key, uid, fence), key.Namespace),
		// The claims are kept current by this process's commits and, with
		// no queue in between, by the informer's events (a delete, another
		// owner's recovery, a cancel).
		Ready: func() error { return r.mem.claims.ready(key, uid, fence, r.Clock.Now(), margin) },
		Run: func(ctx context.Context) {
			res := job(ctx)
			res.uid, res.fence = uid, fence
			r.finish(ctx, key, res)
		},
		NotStarted: func(cause error) {
			var stale *staleLeaseError
			if errors.As(cause, &stale) && r.life != nil {
				// Still this process's claim: the owner takes the intent back.
				r.finish(r.life, key, ioResult{uid: uid, fence: fence, notStarted: &notStarted{callID: callID, cause: cause}})
				return
			}
			r.mem.waits.forget(key) // a wait in admission (model_waits.go) ends with the job
			r.mem.inbox.abandon(key)
		},
	})
}

// finish files a job's result and wakes the run's reconcile through the
// channel source. A job cut short by the manager stopping (at the end of
// the drain) or by the loss of its claim files nothing: like a crash, it
// leaves an intent without an outcome in the journal. A job that ends
// during the drain files its result for the releaser.
func (r *AgentRunReconciler) finish(ctx context.Context, key types.NamespacedName, res ioResult) {
	r.mem.waits.forget(key) // whatever it waited for is over
	if ctx.Err() != nil {
		r.mem.inbox.abandon(key)
		return
	}
	r.mem.inbox.deliver(key, res)
	ev := event.GenericEvent{Object: &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}}}
	select {
	case r.events <- ev:
	case <-ctx.Done():
	}
}

// secret reads one key of a Secret past the cache (internal/secrets).
func (r *AgentRunReconciler) secret(ctx context.Context, namespace string, sel exagentv1.SecretKeySelector) (string, error) {
	return secrets.Read(ctx, r.APIReader, namespace, sel)
}

// modelEndpoint names the executor's per-endpoint bucket of a model.
func modelEndpoint(spec *exagentv1.ModelSpec) string {
	switch spec.Provider {
	case exagentv1.ModelProviderScripted:
		return "model:scripted"
	case exagentv1.ModelProviderAnthropic:
		return "model:" + hostOf(spec.BaseURL, "anthropic")
	case exagentv1.ModelProviderBedrock:
		return "model:" + hostOf(spec.BaseURL, "bedrock-runtime."+spec.Region)
	}
	return "model:" + hostOf(spec.BaseURL, "openai")
}

// toolEndpoint names the executor's per-endpoint bucket of a tool.
func toolEndpoint(spec *exagentv1.ToolSpec) string {
	switch {
	case spec == nil:
		return "tool:unknown"
	case spec.HTTP != nil:
		return "tool:" + hostOf(spec.HTTP.URL, "http")
	case spec.MCP != nil:
		return "tool:" + hostOf(spec.MCP.URL, "mcp")
	case spec.Builtin != nil:
		return "tool:kube-apiserver"
	}
	return "tool:" + spec.Kind()
}

func hostOf(raw, def string) string {
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		return u.Host
	}
	return def
}

// isScriptExhausted tells a script past its end (the run fails with
// ScriptExhausted) from a model error the engine retries.
func isScriptExhausted(err error) bool { return errors.Is(err, model.ErrScriptExhausted) }

// finalModelError is the reason a model error ends the run at once: one
// that the next request would meet again — the egress policy refuses the
// endpoint, its answer passes the bound, it redirects, its certificate is
// not trusted, the Agent's model cannot be built — rather than a
// failure the engine retries. A model request has no side effect, so the
// run fails clearly instead of going Uncertain.
func finalModelError(err error) (reason string, ok bool) {
	var denied *egress.DeniedError
	var redirect *model.RedirectError
	var untrusted *model.UntrustedError
	var config *model.ConfigError
	var stop *model.StopError
	switch {
	case errors.As(err, &config):
		return config.Reason, true
	case errors.As(err, &stop):
		return stop.Reason, true
	case errors.As(err, &untrusted):
		return exagentv1.ReasonModelCertificateUntrusted, true
	case errors.As(err, &denied):
		return exagentv1.ReasonEgressDenied, true
	case bounded.IsTooLarge(err):
		return exagentv1.ReasonModelAnswerTooLarge, true
	case errors.As(err, &redirect):
		return exagentv1.ReasonModelRedirected, true
	}
	return "", false
}

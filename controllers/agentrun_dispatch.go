package controllers

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
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

func (r *AgentRunReconciler) dispatchModel(sc *scope, req loop.ModelRequest) {
	key, fence, ns := sc.key, *sc.fence, sc.key.Namespace
	spec := sc.agent.Spec.Model.DeepCopy()
	r.inbox.started(key, 1)
	r.Executor.SubmitOr(modelEndpoint(spec), func(ctx context.Context) {
		ctx, end := r.Tracer.StartChat(ctx, key, fence.Attempt, spec.Provider, spec.Name) // notify: chat span
		res := ioResult{fence: fence}
		p, err := model.For(ctx, spec, func(ctx context.Context, sel exagentv1.SecretKeySelector) (string, error) {
			return r.secret(ctx, ns, sel)
		}, r.ModelOptions)
		if err == nil {
			var resp loop.ModelResponse
			if resp, err = p.Complete(ctx, req); err == nil {
				res.model = &resp
			}
		}
		res.modelErr = err
		observeModelRequest(spec.Provider, res.model, err) // notify: metrics (controllers/metrics.go)
		endChat(end, res.model, err)                       // notify: chat span
		r.finish(ctx, key, res)
	}, func() { r.inbox.abandon(key) })
}

func (r *AgentRunReconciler) dispatchTool(sc *scope, inv loop.ToolInvocation) {
	key, fence := sc.key, *sc.fence
	spec := sc.agent.Spec.Tool(inv.Tool).DeepCopy()
	call := tools.Call{
		ToolInvocation: inv,
		RunNamespace:   sc.run.Namespace,
		RunName:        sc.run.Name,
		RunUID:         string(sc.run.UID),
		ServiceAccount: sc.run.Spec.ServiceAccount(),
	}
	r.inbox.started(key, 1)
	r.Executor.SubmitOr(toolEndpoint(spec), func(ctx context.Context) {
		ctx, end := r.Tracer.StartTool(ctx, key, fence.Attempt, inv.Tool, toolKind(spec), inv.CallID) // notify: execute_tool span
		out := r.Tools.Invoke(ctx, spec, call)
		observeToolCall(inv.Tool, out.Kind) // notify: metrics (controllers/metrics.go)
		end(string(out.Kind), nil)          // notify: execute_tool span
		r.Hooks.afterEffect(ctx, key, out)
		r.finish(ctx, key, ioResult{fence: fence, tool: &out})
	}, func() { r.inbox.abandon(key) })
}

// finish files a job's result and wakes the run's reconcile through the
// channel source. A job cut short by the manager stopping (at the end of
// the drain) files nothing: like a crash, it leaves an intent without an
// outcome in the journal. A job that ends during the drain files its
// result for the releaser.
func (r *AgentRunReconciler) finish(ctx context.Context, key types.NamespacedName, res ioResult) {
	if ctx.Err() != nil {
		r.inbox.abandon(key)
		return
	}
	r.inbox.deliver(key, res)
	ev := event.GenericEvent{Object: &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}}}
	select {
	case r.events <- ev:
	case <-ctx.Done():
	}
}

// secret reads one key of a Secret past the cache: the operator never
// caches (or watches) every Secret of the cluster.
func (r *AgentRunReconciler) secret(ctx context.Context, namespace string, sel exagentv1.SecretKeySelector) (string, error) {
	s := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: sel.Name}, s); err != nil {
		return "", fmt.Errorf("secret %s/%s: %w", namespace, sel.Name, err)
	}
	v, ok := s.Data[sel.Key]
	if !ok {
		return "", fmt.Errorf("secret %s/%s has no key %q", namespace, sel.Name, sel.Key)
	}
	return string(v), nil
}

// modelEndpoint names the executor's per-endpoint bucket of a model.
func modelEndpoint(spec *exagentv1.ModelSpec) string {
	if spec.Provider == exagentv1.ModelProviderScripted {
		return "model:scripted"
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

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

package health

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/ext"
	lua "github.com/yuin/gopher-lua"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/yaml"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/testenv"
	"github.com/exagent-io/exagent/loop"
)

// sample is a run in one phase, as the controller would have written it.
type sample struct {
	phase exagentv1.RunPhase
	// wantArgo, wantKstatus and wantFlux are the verdicts of each tool.
	wantArgo    string
	wantKstatus status.Status
	wantFlux    status.Status
}

var samples = []sample{
	{"", "Progressing", status.InProgressStatus, status.InProgressStatus},
	{exagentv1.PhaseQueued, "Progressing", status.InProgressStatus, status.InProgressStatus},
	{exagentv1.PhaseRunning, "Progressing", status.InProgressStatus, status.InProgressStatus},
	{exagentv1.PhaseAwaitingApproval, "Suspended", status.InProgressStatus, status.InProgressStatus},
	{exagentv1.PhaseApproved, "Progressing", status.InProgressStatus, status.InProgressStatus},
	{exagentv1.PhaseUncertain, "Suspended", status.InProgressStatus, status.InProgressStatus},
	{exagentv1.PhaseWaiting, "Progressing", status.InProgressStatus, status.InProgressStatus},
	{exagentv1.PhaseSucceeded, "Healthy", status.CurrentStatus, status.CurrentStatus},
	{exagentv1.PhaseFailed, "Degraded", status.FailedStatus, status.FailedStatus},
	{exagentv1.PhaseDenied, "Degraded", status.FailedStatus, status.FailedStatus},
	{exagentv1.PhaseExpired, "Degraded", status.FailedStatus, status.FailedStatus},
	{exagentv1.PhaseCancelled, "Degraded", status.FailedStatus, status.FailedStatus},
}

// TestEveryPhaseIsSampled keeps the table honest when a phase is added.
func TestEveryPhaseIsSampled(t *testing.T) {
	crd, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "crd", "bases", "exagent.io_agentruns.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, s := range samples {
		have[string(s.phase)] = true
	}
	for _, p := range []exagentv1.RunPhase{exagentv1.PhaseQueued, exagentv1.PhaseRunning, exagentv1.PhaseAwaitingApproval,
		exagentv1.PhaseApproved, exagentv1.PhaseSucceeded, exagentv1.PhaseFailed, exagentv1.PhaseDenied,
		exagentv1.PhaseCancelled, exagentv1.PhaseExpired, exagentv1.PhaseUncertain, exagentv1.PhaseWaiting} {
		if !have[string(p)] {
			t.Errorf("phase %s has no sample", p)
		}
		if !strings.Contains(string(crd), "- "+string(p)+"\n") {
			t.Errorf("phase %s is not in the CRD's enum", p)
		}
	}
}

// object is the sample run as the apiserver would serve it.
func (s sample) object(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	now := time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)
	st := exagentv1.AgentRunStatus{Phase: s.phase, ObservedGeneration: 1}
	switch s.phase {
	case "":
		st.ObservedGeneration = 0 // the CRD's default (api/v1beta1: AgentRun.Status)
	case exagentv1.PhaseAwaitingApproval:
		exp := metav1.NewTime(now.Add(time.Hour))
		st.Reason, st.Message, st.PendingApprovals = exagentv1.ReasonPending, "waiting for 1 approval", 1
		st.Approvals = []exagentv1.Approval{{ID: "a-1", CallID: "c1", PayloadHash: "h", Revision: 1,
			State: exagentv1.ApprovalPending, RequestedAt: metav1.NewTime(now), ExpiresAt: &exp}}
	case exagentv1.PhaseUncertain:
		st.Reason, st.Message = exagentv1.ReasonOutcomeUncertain, "call c1 (charge) has no confirmed outcome"
		st.Calls = []exagentv1.ToolCall{{ID: "c1", Tool: "charge", State: exagentv1.CallUncertain}}
	case exagentv1.PhaseWaiting:
		since, until := metav1.NewMicroTime(now), metav1.NewMicroTime(now.Add(time.Hour))
		st.Reason, st.Message = exagentv1.ReasonWaiting, "waiting: call c1 (nap) until 2026-03-04T11:00:00Z"
		st.Calls = []exagentv1.ToolCall{{ID: "c1", Tool: "nap", State: exagentv1.CallStarted,
			Wait: &exagentv1.CallWait{Kind: exagentv1.WaitTimer, Since: since, Until: until}}}
	case exagentv1.PhaseSucceeded:
		st.Reason, st.Message, st.Output = exagentv1.ReasonSucceeded, "done", "done"
	case exagentv1.PhaseFailed:
		st.Reason, st.Message = exagentv1.ReasonScriptExhausted, "the script has no turn 3"
	case exagentv1.PhaseDenied:
		st.Reason, st.Message = exagentv1.ReasonDenied, "denied by alice: no"
	case exagentv1.PhaseExpired:
		st.Reason, st.Message = exagentv1.ReasonApprovalExpired, "approval a-1 expired"
	case exagentv1.PhaseCancelled:
		st.Reason, st.Message = exagentv1.ReasonCancelled, "cancelled by alice"
	}
	if s.phase != "" {
		st.Conditions = loop.Conditions(st, 1, now)
	}
	run := &exagentv1.AgentRun{
		TypeMeta:   metav1.TypeMeta{APIVersion: exagentv1.GroupVersion.String(), Kind: "AgentRun"},
		ObjectMeta: metav1.ObjectMeta{Name: "triage-42", Namespace: "ops", Generation: 1},
		Spec:       exagentv1.AgentRunSpec{AgentRef: exagentv1.LocalObjectReference{Name: "triage"}, Input: "go"},
		Status:     st,
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(run)
	if err != nil {
		t.Fatal(err)
	}
	if s.phase == "" {
		m["status"] = map[string]any{"observedGeneration": int64(0)} // as served: the default, nothing omitted
	}
	// Through JSON, as a client decodes it (integers as int64, no Go types).
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	return u
}

func name(p exagentv1.RunPhase) string {
	if p == "" {
		return "NotStarted"
	}
	return string(p)
}

func TestKstatus(t *testing.T) {
	for _, s := range samples {
		t.Run(name(s.phase), func(t *testing.T) {
			res, err := status.Compute(s.object(t))
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != s.wantKstatus {
				t.Errorf("kstatus = %s (%s), want %s", res.Status, res.Message, s.wantKstatus)
			}
		})
	}
}

func TestArgoCDHealthLua(t *testing.T) {
	script, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "argocd", "health.lua"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range samples {
		t.Run(name(s.phase), func(t *testing.T) {
			st, msg := runHealthLua(t, string(script), s.object(t).Object)
			if st != s.wantArgo {
				t.Errorf("health = %s (%s), want %s", st, msg, s.wantArgo)
			}
			if s.phase == exagentv1.PhaseAwaitingApproval && !strings.Contains(msg, "kubectl approve show triage-42 -n ops") {
				t.Errorf("a Suspended run's message should say how to decide: %q", msg)
			}
			if s.phase == exagentv1.PhaseWaiting && !strings.Contains(msg, "resumes on its own") {
				t.Errorf("a Waiting run's message should say it resumes by itself: %q", msg)
			}
			if s.phase == exagentv1.PhaseFailed && !strings.Contains(msg, "ScriptExhausted") {
				t.Errorf("a Degraded run's message should carry the reason: %q", msg)
			}
		})
	}
}

// runHealthLua runs an Argo CD health script the way Argo CD does: the
// object as the global obj, the script's return value a table with status
// and message.
func runHealthLua(t *testing.T, script string, obj map[string]any) (string, string) {
	t.Helper()
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer L.Close()
	for _, lib := range []struct {
		name string
		fn   lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath}} {
		L.Push(L.NewFunction(lib.fn))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	L.SetGlobal("obj", toLua(L, obj))
	if err := L.DoString(script); err != nil {
		t.Fatalf("health.lua: %v", err)
	}
	ret, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		t.Fatalf("health.lua returned %s, want a table", L.Get(-1).Type())
	}
	return lua.LVAsString(ret.RawGetString("status")), lua.LVAsString(ret.RawGetString("message"))
}

func toLua(L *lua.LState, v any) lua.LValue {
	switch x := v.(type) {
	case nil:
		return lua.LNil
	case string:
		return lua.LString(x)
	case bool:
		return lua.LBool(x)
	case int64:
		return lua.LNumber(x)
	case float64:
		return lua.LNumber(x)
	case []any:
		tb := L.NewTable()
		for _, e := range x {
			tb.Append(toLua(L, e))
		}
		return tb
	case map[string]any:
		tb := L.NewTable()
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			tb.RawSetString(k, toLua(L, x[k]))
		}
		return tb
	}
	panic(fmt.Sprintf("toLua: unexpected %T", v))
}

// healthCheckExpr is one entry of a Flux Kustomization's spec.healthCheckExprs.
type healthCheckExpr struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	InProgress string `json:"inProgress"`
	Failed     string `json:"failed"`
	Current    string `json:"current"`
}

// fluxExprs reads config/flux/healthcheckexprs.yaml: one entry per kind
// of v1beta1 with a current expression, and the same for v1alpha1.
func fluxExprs(t *testing.T) map[string]healthCheckExpr {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "flux", "healthcheckexprs.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var exprs []healthCheckExpr
	if err := yaml.UnmarshalStrict(b, &exprs); err != nil {
		t.Fatal(err)
	}
	out := map[string]healthCheckExpr{}
	alpha := map[string]healthCheckExpr{}
	for _, e := range exprs {
		switch e.APIVersion {
		case exagentv1.GroupVersion.String():
			if _, dup := out[e.Kind]; dup || e.Current == "" {
				t.Fatalf("entry %+v: want one per kind, with a current expression", e)
			}
			out[e.Kind] = e
		case "exagent.io/v1alpha1":
			alpha[e.Kind] = e
		default:
			t.Fatalf("entry %+v: not of exagent's API versions", e)
		}
	}
	// Manifests still in the deprecated version are judged alike.
	for kind, e := range out {
		a := alpha[kind]
		a.APIVersion = e.APIVersion
		if a != e || len(alpha) != len(out) {
			t.Fatalf("the v1alpha1 entries must be the v1beta1 ones: %s %+v vs %+v", kind, alpha[kind], e)
		}
	}
	return out
}

func TestFluxHealthCheckExprs(t *testing.T) {
	e, ok := fluxExprs(t)["AgentRun"]
	if !ok {
		t.Fatal("no AgentRun entry")
	}
	for _, s := range samples {
		if s.phase == "" {
			continue // no status at all: Flux reports the evaluation error and retries until the controller wrote one
		}
		t.Run(name(s.phase), func(t *testing.T) {
			got, err := fluxEvaluate(e, s.object(t).Object)
			if err != nil {
				t.Fatal(err)
			}
			if got != s.wantFlux {
				t.Errorf("flux = %s, want %s", got, s.wantFlux)
			}
		})
	}
}

// fluxEvaluate follows Flux's CEL status evaluator (RFC 0009): an
// unobserved generation is in progress; then inProgress, failed, current
// in that order, the first true one wins; none true is in progress. The
// environment is Flux's: parsed (not compiled) expressions over the
// object's top-level fields, optional types and the strings, sets and
// encoders extensions.
func fluxEvaluate(e healthCheckExpr, obj map[string]any) (status.Status, error) {
	u := &unstructured.Unstructured{Object: obj}
	if og, ok, _ := unstructured.NestedInt64(obj, "status", "observedGeneration"); ok && og != u.GetGeneration() {
		return status.InProgressStatus, nil
	}
	env, err := cel.NewEnv(cel.HomogeneousAggregateLiterals(), cel.EagerlyValidateDeclarations(true),
		cel.DefaultUTCTimeZone(true), cel.CrossTypeNumericComparisons(true), cel.OptionalTypes(),
		ext.Strings(), ext.Sets(), ext.Encoders())
	if err != nil {
		return "", err
	}
	for _, c := range []struct {
		expr string
		st   status.Status
	}{{e.InProgress, status.InProgressStatus}, {e.Failed, status.FailedStatus}, {e.Current, status.CurrentStatus}} {
		if c.expr == "" {
			continue
		}
		ast, iss := env.Parse(c.expr)
		if iss.Err() != nil {
			return "", fmt.Errorf("parsing %q: %w", c.expr, iss.Err())
		}
		prg, err := env.Program(ast)
		if err != nil {
			return "", err
		}
		val, _, err := prg.ContextEval(context.Background(), obj)
		if err != nil {
			return "", fmt.Errorf("evaluating %q: %w", c.expr, err)
		}
		if b, ok := val.(types.Bool); !ok {
			return "", fmt.Errorf("%q is %s, not a bool", c.expr, val.Type())
		} else if b {
			return c.st, nil
		}
	}
	return status.InProgressStatus, nil
}

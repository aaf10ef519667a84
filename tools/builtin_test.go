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

package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/testenv"
	"github.com/exagent-io/exagent/loop"
	"github.com/exagent-io/exagent/tools"
)

// control is started by the first test that needs it (env).
var control = &testenv.Lazy{}

func env() *testenv.Env { return control.Get() }

func TestMain(m *testing.M) { control.Main(m) }

// builtinFixture is one case's namespace: ConfigMaps "a" and "b", a
// Deployment "web" with one replica, a ServiceAccount "agent" with RBAC on
// them and a ServiceAccount "nobody" with none.
type builtinFixture struct {
	ns string
}

// TestBuiltinTools runs builtin tools against a real kube-apiserver the way
// the controller does (Registry.Invoke with the Agent's ToolSpec and a Call
// naming the run's ServiceAccount), and checks both the outcome the model
// sees and the objects in the apiserver.
func TestBuiltinTools(t *testing.T) {
	ctx := t.Context()
	reg := newRegistry(t)

	tool := func(op exagentv1.BuiltinOperation, kinds ...string) *exagentv1.ToolSpec {
		return &exagentv1.ToolSpec{Name: strings.ToLower(string(op)), Builtin: &exagentv1.BuiltinTool{Operation: op, Kinds: kinds}}
	}
	cmData := func(t *testing.T, f builtinFixture, name string) map[string]string {
		t.Helper()
		cm := &corev1.ConfigMap{}
		if err := env().Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: name}, cm); err != nil {
			t.Fatalf("get ConfigMap %s: %v", name, err)
		}
		return cm.Data
	}
	replicas := func(t *testing.T, f builtinFixture) int32 {
		t.Helper()
		d := &appsv1.Deployment{}
		if err := env().Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "web"}, d); err != nil {
			t.Fatalf("get Deployment web: %v", err)
		}
		return ptr.Deref(d.Spec.Replicas, -1)
	}

	tests := map[string]struct {
		sa       string
		spec     *exagentv1.ToolSpec
		args     string
		wantKind loop.ResultKind
		wantOut  string
		// check verifies the effect in the apiserver; nil means nothing of
		// the fixture may have changed.
		check func(t *testing.T, f builtinFixture)
	}{
		"get ConfigMap": {
			sa: "agent", spec: tool(exagentv1.BuiltinGet, "ConfigMap"), args: `{"name":"a"}`,
			wantKind: loop.ResultSucceeded, wantOut: `"colour":"red"`,
		},
		"get ConfigMap with explicit kind": {
			sa: "agent", spec: tool(exagentv1.BuiltinGet, "ConfigMap", "Deployment.apps"), args: `{"kind":"ConfigMap","name":"b"}`,
			wantKind: loop.ResultSucceeded, wantOut: `"colour":"blue"`,
		},
		"get Deployment by Kind.group": {
			sa: "agent", spec: tool(exagentv1.BuiltinGet, "ConfigMap", "Deployment.apps"), args: `{"kind":"Deployment.apps","name":"web"}`,
			wantKind: loop.ResultSucceeded, wantOut: `"name":"web"`,
		},
		"get missing ConfigMap is not found": {
			sa: "agent", spec: tool(exagentv1.BuiltinGet, "ConfigMap"), args: `{"name":"zzz"}`,
			wantKind: loop.ResultFailed, wantOut: "not found",
		},
		"list ConfigMaps": {
			sa: "agent", spec: tool(exagentv1.BuiltinList, "ConfigMap"), args: `{}`,
			wantKind: loop.ResultSucceeded, wantOut: `"items":["a","b"]`,
		},
		"list ConfigMaps by label": {
			sa: "agent", spec: tool(exagentv1.BuiltinList, "ConfigMap"), args: `{"labelSelector":"pick=yes"}`,
			wantKind: loop.ResultSucceeded, wantOut: `"items":["b"]`,
		},
		"patch ConfigMap": {
			sa: "agent", spec: tool(exagentv1.BuiltinPatch, "ConfigMap"), args: `{"name":"a","patch":{"data":{"colour":"green"}}}`,
			wantKind: loop.ResultSucceeded, wantOut: "patched ConfigMap/a",
			check: func(t *testing.T, f builtinFixture) {
				if got := cmData(t, f, "a")["colour"]; got != "green" {
					t.Errorf("ConfigMap a colour = %q, want green", got)
				}
			},
		},
		"apply existing ConfigMap": {
			sa: "agent", spec: tool(exagentv1.BuiltinApply, "ConfigMap"),
			args:     `{"manifest":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"},"data":{"colour":"teal"}}}`,
			wantKind: loop.ResultSucceeded, wantOut: "applied ConfigMap/b",
			check: func(t *testing.T, f builtinFixture) {
				if got := cmData(t, f, "b")["colour"]; got != "teal" {
					t.Errorf("ConfigMap b colour = %q, want teal", got)
				}
			},
		},
		"delete ConfigMap": {
			sa: "agent", spec: tool(exagentv1.BuiltinDelete, "ConfigMap"), args: `{"name":"a"}`,
			wantKind: loop.ResultSucceeded, wantOut: "deleted ConfigMap/a",
			check: func(t *testing.T, f builtinFixture) {
				err := env().Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "a"}, &corev1.ConfigMap{})
				if !apierrors.IsNotFound(err) {
					t.Errorf("ConfigMap a after delete: err = %v, want NotFound", err)
				}
			},
		},
		"scale Deployment": {
			sa: "agent", spec: tool(exagentv1.BuiltinScale, "Deployment.apps"), args: `{"name":"web","replicas":3}`,
			wantKind: loop.ResultSucceeded, wantOut: "scaled Deployment/web to 3 replicas",
			check: func(t *testing.T, f builtinFixture) {
				if got := replicas(t, f); got != 3 {
					t.Errorf("replicas = %d, want 3", got)
				}
			},
		},
		"scale Deployment to zero": {
			sa: "agent", spec: tool(exagentv1.BuiltinScale, "Deployment.apps"), args: `{"kind":"Deployment","name":"web","replicas":0}`,
			wantKind: loop.ResultSucceeded, wantOut: "scaled Deployment/web to 0 replicas",
			check: func(t *testing.T, f builtinFixture) {
				if got := replicas(t, f); got != 0 {
					t.Errorf("replicas = %d, want 0", got)
				}
			},
		},

		// Kinds outside the tool's list are refused before any request.
		"delete of a kind not in the tool's kinds": {
			sa: "agent", spec: tool(exagentv1.BuiltinDelete, "ConfigMap"), args: `{"kind":"Deployment","name":"web"}`,
			wantKind: loop.ResultFailed, wantOut: "not one this tool may touch",
		},
		"patch of a kind not in the tool's kinds": {
			sa: "agent", spec: tool(exagentv1.BuiltinPatch, "Deployment.apps"), args: `{"kind":"ConfigMap","name":"a","patch":{"data":{"colour":"green"}}}`,
			wantKind: loop.ResultFailed, wantOut: "not one this tool may touch",
		},
		"kind of another group than the tool's": {
			sa: "agent", spec: tool(exagentv1.BuiltinScale, "Deployment.apps"), args: `{"kind":"Deployment.extensions","name":"web","replicas":5}`,
			wantKind: loop.ResultFailed, wantOut: "not one this tool may touch",
		},
		// A kind without its group names the core group: a tool naming
		// "Deployment" is misconfigured, and says so.
		"tool kind without its group": {
			sa: "agent", spec: tool(exagentv1.BuiltinScale, "Deployment"), args: `{"name":"web","replicas":0}`,
			wantKind: loop.ResultFailed, wantOut: "not served by the cluster",
		},
		"apply of a manifest of another kind": {
			sa: "agent", spec: tool(exagentv1.BuiltinApply, "ConfigMap"),
			args:     `{"manifest":{"apiVersion":"v1","kind":"Secret","metadata":{"name":"a"},"stringData":{"k":"v"}}}`,
			wantKind: loop.ResultFailed, wantOut: "does not match",
		},

		// A ServiceAccount without RBAC: the apiserver's refusal is a failed
		// outcome the model sees, and nothing changes.
		"get as nobody": {
			sa: "nobody", spec: tool(exagentv1.BuiltinGet, "ConfigMap"), args: `{"name":"a"}`,
			wantKind: loop.ResultFailed, wantOut: "forbidden",
		},
		"list as nobody": {
			sa: "nobody", spec: tool(exagentv1.BuiltinList, "ConfigMap"), args: `{}`,
			wantKind: loop.ResultFailed, wantOut: "forbidden",
		},
		"patch as nobody": {
			sa: "nobody", spec: tool(exagentv1.BuiltinPatch, "ConfigMap"), args: `{"name":"a","patch":{"data":{"colour":"green"}}}`,
			wantKind: loop.ResultFailed, wantOut: "forbidden",
		},
		"apply as nobody": {
			sa: "nobody", spec: tool(exagentv1.BuiltinApply, "ConfigMap"),
			args:     `{"manifest":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"},"data":{"colour":"teal"}}}`,
			wantKind: loop.ResultFailed, wantOut: "forbidden",
		},
		"delete as nobody": {
			sa: "nobody", spec: tool(exagentv1.BuiltinDelete, "ConfigMap"), args: `{"name":"a"}`,
			wantKind: loop.ResultFailed, wantOut: "forbidden",
		},
		"scale as nobody": {
			sa: "nobody", spec: tool(exagentv1.BuiltinScale, "Deployment.apps"), args: `{"name":"web","replicas":3}`,
			wantKind: loop.ResultFailed, wantOut: "forbidden",
		},
		// "agent" may scale but not patch the Deployment itself, nor create.
		"patch of a Deployment beyond the agent's RBAC": {
			sa: "agent", spec: tool(exagentv1.BuiltinPatch, "Deployment.apps"), args: `{"name":"web","patch":{"spec":{"replicas":7}}}`,
			wantKind: loop.ResultFailed, wantOut: "forbidden",
		},
		"apply creating a ConfigMap beyond the agent's RBAC": {
			sa: "agent", spec: tool(exagentv1.BuiltinApply, "ConfigMap"),
			args:     `{"manifest":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"new"},"data":{"colour":"teal"}}}`,
			wantKind: loop.ResultFailed, wantOut: "forbidden",
			check: func(t *testing.T, f builtinFixture) {
				err := env().Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "new"}, &corev1.ConfigMap{})
				if !apierrors.IsNotFound(err) {
					t.Errorf("ConfigMap new: err = %v, want NotFound", err)
				}
			},
		},

		// Bad arguments are failed outcomes, never panics or unknowns.
		"get without name": {
			sa: "agent", spec: tool(exagentv1.BuiltinGet, "ConfigMap"), args: `{}`,
			wantKind: loop.ResultFailed, wantOut: "argument name is required",
		},
		"delete without name": {
			sa: "agent", spec: tool(exagentv1.BuiltinDelete, "ConfigMap"), args: `{}`,
			wantKind: loop.ResultFailed, wantOut: "argument name is required",
		},
		"delete without any arguments": {
			sa: "agent", spec: tool(exagentv1.BuiltinDelete, "ConfigMap"), args: ``,
			wantKind: loop.ResultFailed, wantOut: "argument name is required",
		},
		"scale without name": {
			sa: "agent", spec: tool(exagentv1.BuiltinScale, "Deployment.apps"), args: `{"replicas":3}`,
			wantKind: loop.ResultFailed, wantOut: "argument name is required",
		},
		"scale without replicas": {
			sa: "agent", spec: tool(exagentv1.BuiltinScale, "Deployment.apps"), args: `{"name":"web"}`,
			wantKind: loop.ResultFailed, wantOut: "argument replicas",
		},
		"scale to negative replicas": {
			sa: "agent", spec: tool(exagentv1.BuiltinScale, "Deployment.apps"), args: `{"name":"web","replicas":-1}`,
			wantKind: loop.ResultFailed, wantOut: "argument replicas",
		},
		"patch without patch": {
			sa: "agent", spec: tool(exagentv1.BuiltinPatch, "ConfigMap"), args: `{"name":"a"}`,
			wantKind: loop.ResultFailed, wantOut: "argument patch",
		},
		"patch that is not a merge patch": {
			sa: "agent", spec: tool(exagentv1.BuiltinPatch, "ConfigMap"), args: `{"name":"a","patch":"colour=green"}`,
			wantKind: loop.ResultFailed,
		},
		"apply without manifest": {
			sa: "agent", spec: tool(exagentv1.BuiltinApply, "ConfigMap"), args: `{}`,
			wantKind: loop.ResultFailed, wantOut: "argument manifest",
		},
		"apply of a manifest without a name": {
			sa: "agent", spec: tool(exagentv1.BuiltinApply, "ConfigMap"),
			args:     `{"manifest":{"apiVersion":"v1","kind":"ConfigMap","data":{"colour":"teal"}}}`,
			wantKind: loop.ResultFailed, wantOut: "metadata.name is required",
		},
		"kind missing when the tool names several": {
			sa: "agent", spec: tool(exagentv1.BuiltinGet, "ConfigMap", "Deployment.apps"), args: `{"name":"a"}`,
			wantKind: loop.ResultFailed, wantOut: "argument kind is required",
		},
		"arguments that are not an object": {
			sa: "agent", spec: tool(exagentv1.BuiltinDelete, "ConfigMap"), args: `["a"]`,
			wantKind: loop.ResultFailed, wantOut: "invalid arguments",
		},
		"replicas of the wrong type": {
			sa: "agent", spec: tool(exagentv1.BuiltinScale, "Deployment.apps"), args: `{"name":"web","replicas":"three"}`,
			wantKind: loop.ResultFailed, wantOut: "invalid arguments",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := newBuiltinFixture(t)
			before := f.versions(t)
			call := tools.Call{
				ToolInvocation: loop.ToolInvocation{CallID: "call-1", Tool: tc.spec.Name, Args: json.RawMessage(tc.args), IdempotencyKey: "uid/call-1", Attempt: 1},
				RunNamespace:   f.ns, RunName: "run", RunUID: "uid", ServiceAccount: tc.sa,
			}
			got := reg.Invoke(ctx, tc.spec, call)
			if got.CallID != call.CallID || got.Kind != tc.wantKind || !strings.Contains(got.Output, tc.wantOut) {
				t.Errorf("result = %s %s %q, want %s %s containing %q", got.CallID, got.Kind, got.Output, call.CallID, tc.wantKind, tc.wantOut)
			}
			if tc.check != nil {
				tc.check(t, f)
				return
			}
			if after := f.versions(t); !equalMaps(before, after) {
				t.Errorf("fixture changed: before %v, after %v", before, after)
			}
		})
	}
}

// TestBuiltinImpersonatesPerCall checks the executor's per-identity client
// cache does not leak one ServiceAccount's rights to another: the same
// Registry, first as the allowed ServiceAccount then as one without rights.
func TestBuiltinImpersonatesPerCall(t *testing.T) {
	ctx := t.Context()
	reg := newRegistry(t)
	f := newBuiltinFixture(t)
	spec := &exagentv1.ToolSpec{Name: "get", Builtin: &exagentv1.BuiltinTool{Operation: exagentv1.BuiltinGet, Kinds: []string{"ConfigMap"}}}
	for i, want := range []struct {
		sa   string
		kind loop.ResultKind
	}{{"agent", loop.ResultSucceeded}, {"nobody", loop.ResultFailed}, {"agent", loop.ResultSucceeded}, {"default", loop.ResultFailed}} {
		call := tools.Call{ToolInvocation: loop.ToolInvocation{CallID: fmt.Sprint("c", i), Args: json.RawMessage(`{"name":"a"}`)},
			RunNamespace: f.ns, RunName: "run", ServiceAccount: want.sa}
		if got := reg.Invoke(ctx, spec, call); got.Kind != want.kind {
			t.Errorf("call %d as %s = %s %q, want %s", i, want.sa, got.Kind, got.Output, want.kind)
		}
	}
}

// newRegistry builds the tool registry as controllers.Setup does, from an
// admin config and a dynamic REST mapper.
func newRegistry(t *testing.T) *tools.Registry {
	t.Helper()
	mapper := newMapper(t, env().Config)
	return &tools.Registry{Builtins: tools.NewBuiltins(env().Config, mapper)}
}

func newMapper(t *testing.T, cfg *rest.Config) meta.RESTMapper {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m, err := apiutil.NewDynamicRESTMapper(cfg, hc)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// newBuiltinFixture creates a fresh namespace with the objects and RBAC of
// builtinFixture, and waits until the apiserver's authorizer grants the
// "agent" ServiceAccount its Role.
func newBuiltinFixture(t *testing.T) builtinFixture {
	t.Helper()
	ctx := t.Context()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "builtin-"}}
	if err := env().Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env().Client.Delete(context.Background(), ns) })
	n := ns.Name
	objs := []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: n}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "nobody", Namespace: n}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: n}, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "patch", "delete"}},
			{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get"}},
			{APIGroups: []string{"apps"}, Resources: []string{"deployments/scale"}, Verbs: []string{"get", "patch", "update"}},
		}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: n},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "agent"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "agent", Namespace: n}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: n}, Data: map[string]string{"colour": "red"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: n, Labels: map[string]string{"pick": "yes"}}, Data: map[string]string{"colour": "blue"}},
		deployment(n, "web"),
	}
	for _, o := range objs {
		if err := env().Client.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	// The RBAC authorizer reads Roles through an informer: wait until the
	// binding is in effect, as a SubjectAccessReview (the same authorizer) sees it.
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, ra := range []authorizationv1.ResourceAttributes{
			{Namespace: n, Verb: "delete", Resource: "configmaps"},
			{Namespace: n, Verb: "patch", Group: "apps", Resource: "deployments", Subresource: "scale"},
		} {
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User:               "system:serviceaccount:" + n + ":agent",
				Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + n, "system:authenticated"},
				ResourceAttributes: &ra,
			}}
			if err := env().Client.Create(ctx, sar); err != nil {
				return false, err
			}
			if !sar.Status.Allowed {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("waiting for the agent's RBAC: %v", err)
	}
	return builtinFixture{ns: n}
}

// versions returns the resourceVersion of every object of the fixture, or
// "gone" for one that no longer exists.
func (f builtinFixture) versions(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, o := range []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b"}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}},
	} {
		key := fmt.Sprintf("%T/%s", o, o.GetName())
		err := env().Client.Get(t.Context(), client.ObjectKey{Namespace: f.ns, Name: o.GetName()}, o)
		switch {
		case apierrors.IsNotFound(err):
			out[key] = "gone"
		case err != nil:
			t.Fatalf("get %s: %v", key, err)
		default:
			out[key] = o.GetResourceVersion()
		}
	}
	return out
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func deployment(ns, name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.invalid/app:1"}}},
			},
		},
	}
}

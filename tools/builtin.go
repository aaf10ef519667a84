package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
	"github.com/exagent-io/exagent/loop"
)

// BuiltinArgs are the arguments a builtin tool accepts from the model.
type BuiltinArgs struct {
	// Kind is "Deployment" or "Deployment.apps"; optional when the tool names one kind.
	Kind string `json:"kind,omitempty"`
	// Name of the object (all operations but List).
	Name string `json:"name,omitempty"`
	// Replicas for Scale.
	Replicas *int32 `json:"replicas,omitempty"`
	// Patch is a JSON merge patch for Patch.
	Patch json.RawMessage `json:"patch,omitempty"`
	// Manifest is the object for Apply (server-side apply).
	Manifest json.RawMessage `json:"manifest,omitempty"`
	// LabelSelector filters List.
	LabelSelector string `json:"labelSelector,omitempty"`
}

// FieldManager is the server-side-apply manager name of builtin Apply.
const FieldManager = "exagent-builtin"

// Builtins executes builtin tools by impersonating the run's ServiceAccount,
// never with the operator's own rights: the ServiceAccount's RBAC is the
// tool's authority, and a refusal is a failed outcome the model sees.
type Builtins struct {
	base   *rest.Config
	mapper meta.RESTMapper

	mu      sync.Mutex
	clients map[string]*dynamic.DynamicClient
}

// NewBuiltins builds the executor from the operator's config (used only as
// the base of impersonated configs) and a REST mapper.
func NewBuiltins(base *rest.Config, mapper meta.RESTMapper) *Builtins {
	return &Builtins{base: base, mapper: mapper, clients: map[string]*dynamic.DynamicClient{}}
}

// Tool returns the Tool for one builtin spec.
func (b *Builtins) Tool(spec *exagentv1.BuiltinTool) Tool {
	return builtinTool{b: b, spec: spec}
}

// clientFor returns a dynamic client impersonating namespace/sa. Clients are
// cached per identity; client-go shares the underlying transport.
func (b *Builtins) clientFor(namespace, sa string) (*dynamic.DynamicClient, error) {
	user := "system:serviceaccount:" + namespace + ":" + sa
	b.mu.Lock()
	defer b.mu.Unlock()
	if c, ok := b.clients[user]; ok {
		return c, nil
	}
	cfg := rest.CopyConfig(b.base)
	// Only the user: for a ServiceAccount username the apiserver adds the
	// groups a real token carries, and the operator needs no right to
	// impersonate groups (which would let it claim any group).
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("impersonating %s: %w", user, err)
	}
	b.clients[user] = c
	return c, nil
}

type builtinTool struct {
	b    *Builtins
	spec *exagentv1.BuiltinTool
}

func (t builtinTool) Invoke(ctx context.Context, call Call) loop.ToolResult {
	var args BuiltinArgs
	if len(call.Args) > 0 {
		if err := json.Unmarshal(call.Args, &args); err != nil {
			return failed(call, "invalid arguments: %v", err)
		}
	}
	gk, err := t.kind(args.Kind)
	if err != nil {
		return failed(call, "%v", err)
	}
	mapping, err := t.b.mapper.RESTMapping(gk)
	if err != nil {
		return failed(call, "kind %s is not served by the cluster: %v", gk, err)
	}
	dc, err := t.b.clientFor(call.RunNamespace, call.ServiceAccount)
	if err != nil {
		return failed(call, "%v", err)
	}
	var ri dynamic.ResourceInterface = dc.Resource(mapping.Resource)
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		// Always the run's namespace: the model does not pick where to act.
		ri = dc.Resource(mapping.Resource).Namespace(call.RunNamespace)
	}
	if t.spec.Operation != exagentv1.BuiltinList && args.Name == "" {
		if t.spec.Operation != exagentv1.BuiltinApply {
			return failed(call, "argument name is required for %s", t.spec.Operation)
		}
	}
	mutating := t.spec.Operation != exagentv1.BuiltinGet && t.spec.Operation != exagentv1.BuiltinList
	out, err := t.do(ctx, ri, gk, args)
	if err != nil {
		return classify(call, err, mutating)
	}
	return succeeded(call, out)
}

func (t builtinTool) do(ctx context.Context, ri dynamic.ResourceInterface, gk schema.GroupKind, args BuiltinArgs) (string, error) {
	switch t.spec.Operation {
	case exagentv1.BuiltinGet:
		obj, err := ri.Get(ctx, args.Name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		return marshalObject(obj)
	case exagentv1.BuiltinList:
		list, err := ri.List(ctx, metav1.ListOptions{LabelSelector: args.LabelSelector})
		if err != nil {
			return "", err
		}
		names := make([]string, 0, len(list.Items))
		for _, it := range list.Items {
			names = append(names, it.GetName())
		}
		b, err := json.Marshal(map[string]any{"kind": gk.Kind, "items": names})
		return string(b), err
	case exagentv1.BuiltinScale:
		if args.Replicas == nil || *args.Replicas < 0 {
			return "", errArgs("argument replicas (>= 0) is required for Scale")
		}
		patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, *args.Replicas)
		if _, err := ri.Patch(ctx, args.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}, "scale"); err != nil {
			return "", err
		}
		return fmt.Sprintf("scaled %s/%s to %d replicas", gk.Kind, args.Name, *args.Replicas), nil
	case exagentv1.BuiltinPatch:
		if len(args.Patch) == 0 {
			return "", errArgs("argument patch (a JSON merge patch) is required for Patch")
		}
		obj, err := ri.Patch(ctx, args.Name, types.MergePatchType, args.Patch, metav1.PatchOptions{})
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("patched %s/%s (resourceVersion %s)", gk.Kind, obj.GetName(), obj.GetResourceVersion()), nil
	case exagentv1.BuiltinApply:
		if len(args.Manifest) == 0 {
			return "", errArgs("argument manifest is required for Apply")
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(args.Manifest); err != nil {
			return "", errArgs("manifest: " + err.Error())
		}
		if u.GroupVersionKind().GroupKind() != gk {
			return "", errArgs(fmt.Sprintf("manifest kind %s does not match %s", u.GroupVersionKind().GroupKind(), gk))
		}
		if u.GetName() == "" {
			// client-go refuses an empty name before sending, with an error
			// classify could not tell from a lost request.
			return "", errArgs("manifest metadata.name is required for Apply")
		}
		force := true
		obj, err := ri.Patch(ctx, u.GetName(), types.ApplyPatchType, args.Manifest, metav1.PatchOptions{FieldManager: FieldManager, Force: &force})
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("applied %s/%s (resourceVersion %s)", gk.Kind, obj.GetName(), obj.GetResourceVersion()), nil
	case exagentv1.BuiltinDelete:
		if err := ri.Delete(ctx, args.Name, metav1.DeleteOptions{}); err != nil {
			return "", err
		}
		return fmt.Sprintf("deleted %s/%s", gk.Kind, args.Name), nil
	}
	return "", errArgs(fmt.Sprintf("operation %q not supported", t.spec.Operation))
}

// kind resolves the model's kind argument against the tool's named kinds.
func (t builtinTool) kind(arg string) (schema.GroupKind, error) {
	allowed := make([]schema.GroupKind, 0, len(t.spec.Kinds))
	for _, k := range t.spec.Kinds {
		allowed = append(allowed, schema.ParseGroupKind(k))
	}
	if arg == "" {
		if len(allowed) == 1 {
			return allowed[0], nil
		}
		return schema.GroupKind{}, fmt.Errorf("argument kind is required: one of %s", strings.Join(t.spec.Kinds, ", "))
	}
	want := schema.ParseGroupKind(arg)
	for _, gk := range allowed {
		if gk.Kind == want.Kind && (want.Group == "" || want.Group == gk.Group) {
			return gk, nil
		}
	}
	return schema.GroupKind{}, fmt.Errorf("kind %q is not one this tool may touch (%s)", arg, strings.Join(t.spec.Kinds, ", "))
}

type argsError string

func (e argsError) Error() string { return string(e) }

func errArgs(msg string) error { return argsError(msg) }

// classify turns an error into an outcome: the apiserver's answer (forbidden,
// not found, invalid) and bad arguments are clean failures; a transport error
// of a mutation after it may have been sent is unknown.
func classify(call Call, err error, mutating bool) loop.ToolResult {
	if _, ok := err.(argsError); ok {
		return failed(call, "%v", err)
	}
	if _, ok := err.(apierrors.APIStatus); ok || apierrors.IsForbidden(err) {
		return failed(call, "%v", err)
	}
	if !mutating || notSent(err) {
		return failed(call, "%v", err)
	}
	return unknown(call, "outcome unknown: %v", err)
}

func marshalObject(obj *unstructured.Unstructured) (string, error) {
	obj.SetManagedFields(nil)
	b, err := obj.MarshalJSON()
	if err != nil {
		return "", fmt.Errorf("encoding object: %w", err)
	}
	return string(b), nil
}

package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

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

// DefaultBuiltinAttempts bounds the sends of an idempotent builtin write.
const DefaultBuiltinAttempts = 3

// Builtins executes builtin tools by impersonating the run's ServiceAccount,
// never with the operator's own rights: the ServiceAccount's RBAC is the
// tool's authority, and a refusal is a failed outcome the model sees.
type Builtins struct {
	base   *rest.Config
	mapper meta.RESTMapper

	// MaxAttempts bounds the sends of an idempotent write whose answer
	// says it may have been applied (the first send included).
	MaxAttempts int
	// Backoff is the wait before the first re-send; it doubles, with
	// jitter, up to MaxBackoff, which also caps the apiserver's Retry-After.
	Backoff, MaxBackoff time.Duration

	mu      sync.Mutex
	clients map[string]*dynamic.DynamicClient
}

// NewBuiltins builds the executor from the operator's config (used only as
// the base of impersonated configs) and a REST mapper.
func NewBuiltins(base *rest.Config, mapper meta.RESTMapper) *Builtins {
	return &Builtins{base: base, mapper: mapper, clients: map[string]*dynamic.DynamicClient{},
		MaxAttempts: DefaultBuiltinAttempts, Backoff: 250 * time.Millisecond, MaxBackoff: 5 * time.Second}
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
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return noWriteRetry{next: rt} })
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
	op := t.spec.Operation
	if op != exagentv1.BuiltinList && op != exagentv1.BuiltinApply && args.Name == "" {
		return failed(call, "argument name is required for %s", op)
	}
	if op == exagentv1.BuiltinGet || op == exagentv1.BuiltinList {
		// A read has no effect: whatever went wrong, nothing happened.
		out, err := t.read(ctx, ri, gk, args)
		if err != nil {
			return failed(call, "%v", err)
		}
		return succeeded(call, out)
	}
	m, err := t.mutation(ctx, ri, gk, args)
	if err != nil {
		return failed(call, "%v", err)
	}
	return t.b.mutate(ctx, call, m)
}

func (t builtinTool) read(ctx context.Context, ri dynamic.ResourceInterface, gk schema.GroupKind, args BuiltinArgs) (string, error) {
	if t.spec.Operation == exagentv1.BuiltinGet {
		obj, err := ri.Get(ctx, args.Name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		return marshalObject(obj)
	}
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
}

// mutation checks the arguments of a write and builds it, saying whether
// sending it again is idempotent by construction (see doc.go):
//   - Scale sets an absolute replica count;
//   - Patch is a JSON merge patch (RFC 7396), and applying one twice gives
//     what applying it once gives: it sets or removes fields and replaces
//     arrays whole, never appends;
//   - Apply is a forced server-side apply of the same manifest by the same
//     field manager;
//   - Delete is idempotent only when fenced by the object's UID, read just
//     before (a re-sent unfenced delete could remove an object re-created
//     under the same name, as a StatefulSet does with its pods).
//
// A write whose re-send depends on the object's state (a resourceVersion
// in the patch or manifest) stays re-sendable: its re-send then fails with
// a Conflict, which after a lost answer is an unknown outcome, not success.
func (t builtinTool) mutation(ctx context.Context, ri dynamic.ResourceInterface, gk schema.GroupKind, args BuiltinArgs) (mutation, error) {
	switch t.spec.Operation {
	case exagentv1.BuiltinScale:
		if args.Replicas == nil || *args.Replicas < 0 {
			return mutation{}, errArgs("argument replicas (>= 0) is required for Scale")
		}
		patch := []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, *args.Replicas))
		return mutation{idempotent: true, send: func(ctx context.Context) (string, error) {
			if _, err := ri.Patch(ctx, args.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "scale"); err != nil {
				return "", err
			}
			return fmt.Sprintf("scaled %s/%s to %d replicas", gk.Kind, args.Name, *args.Replicas), nil
		}}, nil
	case exagentv1.BuiltinPatch:
		if len(args.Patch) == 0 {
			return mutation{}, errArgs("argument patch (a JSON merge patch) is required for Patch")
		}
		return mutation{idempotent: true, send: func(ctx context.Context) (string, error) {
			obj, err := ri.Patch(ctx, args.Name, types.MergePatchType, args.Patch, metav1.PatchOptions{})
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("patched %s/%s (resourceVersion %s)", gk.Kind, obj.GetName(), obj.GetResourceVersion()), nil
		}}, nil
	case exagentv1.BuiltinApply:
		if len(args.Manifest) == 0 {
			return mutation{}, errArgs("argument manifest is required for Apply")
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(args.Manifest); err != nil {
			return mutation{}, errArgs("manifest: " + err.Error())
		}
		if u.GroupVersionKind().GroupKind() != gk {
			return mutation{}, errArgs(fmt.Sprintf("manifest kind %s does not match %s", u.GroupVersionKind().GroupKind(), gk))
		}
		if u.GetName() == "" {
			return mutation{}, errArgs("manifest metadata.name is required for Apply")
		}
		force := true
		return mutation{idempotent: true, send: func(ctx context.Context) (string, error) {
			obj, err := ri.Patch(ctx, u.GetName(), types.ApplyPatchType, args.Manifest, metav1.PatchOptions{FieldManager: FieldManager, Force: &force})
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("applied %s/%s (resourceVersion %s)", gk.Kind, obj.GetName(), obj.GetResourceVersion()), nil
		}}, nil
	case exagentv1.BuiltinDelete:
		return t.deletion(ctx, ri, gk, args.Name)
	}
	return mutation{}, errArgs(fmt.Sprintf("operation %q not supported", t.spec.Operation))
}

// deletion reads the object first so the delete is fenced by its UID.
// A ServiceAccount that may delete but not get gets an unfenced delete,
// which is not re-sent: its lost answer is an unknown outcome.
func (t builtinTool) deletion(ctx context.Context, ri dynamic.ResourceInterface, gk schema.GroupKind, name string) (mutation, error) {
	done := fmt.Sprintf("deleted %s/%s", gk.Kind, name)
	opts := metav1.DeleteOptions{}
	m := mutation{}
	obj, err := ri.Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		uid := obj.GetUID()
		opts.Preconditions = &metav1.Preconditions{UID: &uid}
		m.idempotent = true
		// Only the UID is a precondition: NotFound or a Conflict on a
		// re-send both say the object this call meant no longer exists.
		m.gone = func(err error) (string, bool) {
			if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
				return done + " (the answer to an earlier try was lost; a re-send found the object gone)", true
			}
			return "", false
		}
	case apierrors.IsForbidden(err):
	default:
		return mutation{}, fmt.Errorf("reading %s/%s before deleting it: %w", gk.Kind, name, err)
	}
	m.send = func(ctx context.Context) (string, error) {
		if err := ri.Delete(ctx, name, opts); err != nil {
			return "", err
		}
		return done, nil
	}
	return m, nil
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

func marshalObject(obj *unstructured.Unstructured) (string, error) {
	obj.SetManagedFields(nil)
	b, err := obj.MarshalJSON()
	if err != nil {
		return "", fmt.Errorf("encoding object: %w", err)
	}
	return string(b), nil
}

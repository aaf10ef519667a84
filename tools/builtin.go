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

package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
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
	// MaxListItems is the most names a List returns; a List that finds
	// more fails, asking for a labelSelector. ListPageSize is the Limit of
	// each page it reads (builtin_clients.go has the defaults).
	MaxListItems, ListPageSize int
	// MaxResponseBytes bounds each apiserver answer a call reads. Set
	// before the first call: clients keep the bound they were made with.
	MaxResponseBytes int

	clock   clock.PassiveClock
	mu      sync.Mutex
	clients *simplelru.LRU[string, *identityClients]
}

// NewBuiltins builds the executor from the operator's config (used only as
// the base of impersonated configs) and a REST mapper.
func NewBuiltins(base *rest.Config, mapper meta.RESTMapper) *Builtins {
	return &Builtins{base: base, mapper: mapper, clients: newClientCache(DefaultBuiltinClients), clock: clock.RealClock{},
		MaxAttempts: DefaultBuiltinAttempts, Backoff: 250 * time.Millisecond, MaxBackoff: 5 * time.Second,
		MaxListItems: DefaultBuiltinMaxListItems, ListPageSize: DefaultBuiltinListPageSize, MaxResponseBytes: DefaultBuiltinMaxResponseBytes}
}

// Tool returns the Tool for one builtin spec.
func (b *Builtins) Tool(spec *exagentv1.BuiltinTool) Tool {
	return builtinTool{b: b, spec: spec}
}

type builtinTool struct {
	b    *Builtins
	spec *exagentv1.BuiltinTool
}

func (t builtinTool) Invoke(ctx context.Context, call Call) loop.ToolResult {
	if call.ServiceAccountRefusal != "" {
		// Before anything is read or sent as the ServiceAccount: a child
		// run's inherited identity its Agent does not (or no longer) allow.
		return failed(call, "%s The call was not run.", call.ServiceAccountRefusal)
	}
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
	if mapping.Resource.GroupResource() == secrets && !t.spec.AllowSecrets {
		// Checked on the resolved resource, whatever the kind's spelling,
		// and here as well as at admission: an Agent admitted before the
		// webhook refused Secrets still names them.
		return failed(call, "this tool may not touch Secrets: a builtin tool acts on Secrets only when the Agent sets "+
			"allowSecrets: true on it, because their data would land in the run's transcript, readable by everyone who may view the run")
	}
	ic, err := t.b.clientsFor(call.RunNamespace, call.ServiceAccount)
	if err != nil {
		return failed(call, "%v", err)
	}
	var ri dynamic.ResourceInterface = ic.dynamic.Resource(mapping.Resource)
	var mi metadata.ResourceInterface = ic.metadata.Resource(mapping.Resource)
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		// Always the run's namespace: the model does not pick where to act.
		ri = ic.dynamic.Resource(mapping.Resource).Namespace(call.RunNamespace)
		mi = ic.metadata.Resource(mapping.Resource).Namespace(call.RunNamespace)
	}
	op := t.spec.Operation
	if op != exagentv1.BuiltinList && op != exagentv1.BuiltinApply && args.Name == "" {
		return failed(call, "argument name is required for %s", op)
	}
	if op == exagentv1.BuiltinGet || op == exagentv1.BuiltinList {
		// A read has no effect: whatever went wrong, nothing happened.
		var out string
		if op == exagentv1.BuiltinGet {
			out, err = t.get(ctx, ri, args)
		} else {
			out, err = t.list(ctx, mi, gk, args)
		}
		if err != nil {
			return failed(call, "%v", t.readError(err))
		}
		return succeeded(call, out)
	}
	m, err := t.mutation(ctx, ri, gk, args)
	if err != nil {
		return failed(call, "%v", err)
	}
	return t.b.mutate(ctx, call, m)
}

// secrets is the resource a builtin tool touches only with allowSecrets.
var secrets = schema.GroupResource{Resource: "secrets"}

func (t builtinTool) get(ctx context.Context, ri dynamic.ResourceInterface, args BuiltinArgs) (string, error) {
	obj, err := ri.Get(ctx, args.Name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return marshalObject(obj)
}

// list returns the names of the objects, read a page of metadata at a
// time (never the objects, never the whole collection at once), and fails
// once it finds more than MaxListItems.
func (t builtinTool) list(ctx context.Context, mi metadata.ResourceInterface, gk schema.GroupKind, args BuiltinArgs) (string, error) {
	maxItems, page := t.b.MaxListItems, t.b.ListPageSize
	if maxItems <= 0 {
		maxItems = DefaultBuiltinMaxListItems
	}
	if page <= 0 {
		page = DefaultBuiltinListPageSize
	}
	// A server fills every page but the last; one that keeps answering
	// short pages with a continue token is cut off, not followed forever.
	maxPages := maxItems/page + 2
	names := []string{}
	opts := metav1.ListOptions{LabelSelector: args.LabelSelector, Limit: int64(page)}
	for pages := 1; ; pages++ {
		l, err := mi.List(ctx, opts)
		if err != nil {
			return "", err
		}
		for i := range l.Items {
			if len(names) == maxItems {
				return "", fmt.Errorf("more than %d %s objects match: a List returns at most %d names; "+
					"narrow it with the labelSelector argument", maxItems, gk.Kind, maxItems)
			}
			names = append(names, l.Items[i].Name)
		}
		if l.Continue == "" {
			break
		}
		if pages == maxPages {
			return "", fmt.Errorf("listing %s: the apiserver was still paging after %d pages of at most %d; "+
				"narrow it with the labelSelector argument", gk.Kind, pages, page)
		}
		opts.Continue = l.Continue
	}
	b, err := json.Marshal(map[string]any{"kind": gk.Kind, "items": names})
	return string(b), err
}

// readError says what a read's error means for the model: an answer over
// the bound is not a reason to "retry", as client-go's wrapping suggests.
func (t builtinTool) readError(err error) error {
	if errors.Is(err, ErrResponseTooLarge) {
		limit := t.b.MaxResponseBytes
		if limit <= 0 {
			limit = DefaultBuiltinMaxResponseBytes
		}
		return fmt.Errorf("the apiserver's answer is larger than %d bytes, the most a builtin call reads: ask for less "+
			"(List returns names only; narrow it with the labelSelector argument)", limit)
	}
	return err
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

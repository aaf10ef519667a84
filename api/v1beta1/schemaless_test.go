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

package v1beta1_test

import (
	"context"
	"encoding"
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// schemalessHeader starts the documentation hack/crdschemaless renders into
// the description of a schemaless status field.
const schemalessHeader = "\n\n" + exagentv1.SchemalessDocHeader + "\n"

var docLine = regexp.MustCompile(`^((?:  )*)- ([A-Za-z0-9_]+) \((.*?)\)(?:: .*)?$`)

// parseDoc reads the documented subtree out of a schemaless field's
// description ("- name (type, bounds…): summary", nested by indentation):
// the attributes in parentheses of each field by its dotted path in the
// subtree ("outcome.evidence").
func parseDoc(t *testing.T, field, desc string) map[string][]string {
	t.Helper()
	_, doc, ok := strings.Cut(desc, schemalessHeader)
	if !ok {
		t.Fatalf("status.%s: the description does not document the subtree: %q", field, desc)
	}
	out := map[string][]string{}
	var parents []string
	for i, line := range strings.Split(doc, "\n") {
		m := docLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("status.%s: line %d of the documented subtree is not a field: %q", field, i+1, line)
		}
		depth := len(m[1]) / 2
		if depth > len(parents) {
			t.Fatalf("status.%s: line %d is nested too deep: %q", field, i+1, line)
		}
		parents = append(parents[:depth], m[2])
		out[strings.Join(parents, ".")] = strings.Split(m[3], ", ")
	}
	return out
}

// statusProperty is status.<name> of the generated AgentRun CRD.
func statusProperty(t *testing.T, s *apiextensionsv1.JSONSchemaProps, name string) apiextensionsv1.JSONSchemaProps {
	t.Helper()
	p, ok := s.Properties["status"].Properties[name]
	if !ok {
		t.Fatalf("the AgentRun CRD has no status.%s", name)
	}
	return p
}

// TestSchemalessStatusFieldsAreSchemalessAndDocumented: every field of
// SchemalessStatusFields is x-kubernetes-preserve-unknown-fields in the
// generated CRD (a list with its items so), keeps its top-level type, and its
// description documents every json field of its Go type at its place in the
// subtree.
func TestSchemalessStatusFieldsAreSchemalessAndDocumented(t *testing.T) {
	s := crdSchema(t, "agentruns")
	goFields := jsonFields(reflect.TypeFor[exagentv1.AgentRunStatus]())
	for _, name := range exagentv1.SchemalessStatusFields {
		t.Run(name, func(t *testing.T) {
			p := statusProperty(t, s, name)
			typ, ok := goFields[name]
			if !ok {
				t.Fatalf("AgentRunStatus has no json field %q", name)
			}
			for typ.Kind() == reflect.Pointer {
				typ = typ.Elem()
			}
			switch typ.Kind() {
			case reflect.Slice:
				if p.Type != "array" || p.Items == nil || p.Items.Schema == nil {
					t.Fatalf("status.%s is a %s list in Go but a %q in the CRD", name, typ.Elem(), p.Type)
				}
				it := p.Items.Schema
				if it.Type != "object" || !ptr.Deref(it.XPreserveUnknownFields, false) || len(it.Properties) > 0 {
					t.Errorf("status.%s: items are not {type: object, x-kubernetes-preserve-unknown-fields: true}: %+v", name, it)
				}
				if p.MaxItems == nil {
					t.Errorf("status.%s lost its maxItems", name)
				}
				if ptr.Deref(p.XListType, "") != "atomic" {
					t.Errorf("status.%s: x-kubernetes-list-type is %q, want atomic", name, ptr.Deref(p.XListType, ""))
				}
			case reflect.Struct:
				if p.Type != "object" || !ptr.Deref(p.XPreserveUnknownFields, false) || len(p.Properties) > 0 {
					t.Errorf("status.%s is not {type: object, x-kubernetes-preserve-unknown-fields: true}: %+v", name, p)
				}
			default:
				t.Fatalf("status.%s is a %s in Go: only objects and lists are made schemaless", name, typ)
			}
			checkDocumented(t, "status."+name, "", typ, parseDoc(t, name, p.Description))
		})
	}
}

// checkDocumented: doc has a line for every json field of typ, recursively
// (prefix is typ's dotted path in the subtree).
func checkDocumented(t *testing.T, path, prefix string, typ reflect.Type, doc map[string][]string) {
	t.Helper()
	typ = element(typ)
	if typ.Kind() != reflect.Struct || leaf(typ) {
		return
	}
	for name, ft := range jsonFields(typ) {
		sub := prefix + name
		if _, ok := doc[sub]; !ok {
			t.Errorf("%s.%s is not documented in the description of the schemaless field", path, sub)
			continue
		}
		checkDocumented(t, path, sub+".", ft, doc)
	}
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// element is what typ holds: through pointers, lists and maps.
func element(typ reflect.Type) reflect.Type {
	for {
		switch typ.Kind() {
		case reflect.Pointer, reflect.Map:
			typ = typ.Elem()
		case reflect.Slice, reflect.Array:
			if typ.Elem().Kind() == reflect.Uint8 {
				return typ // []byte is a string
			}
			typ = typ.Elem()
		default:
			return typ
		}
	}
}

// leaf: typ marshals itself (metav1.Time, RawExtension, …), so its Go
// fields are not json fields.
func leaf(typ reflect.Type) bool {
	p := reflect.PointerTo(typ)
	return typ.Implements(jsonMarshaler) || p.Implements(jsonMarshaler) ||
		typ.Implements(textMarshaler) || p.Implements(textMarshaler)
}

// jsonFields are the json fields of the struct typ and their Go types,
// inlined (embedded) structs flattened.
func jsonFields(typ reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range typ.NumField() {
		f := typ.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" || strings.Contains(","+opts+",", ",inline,") {
			for n, ft := range jsonFields(element(f.Type)) {
				out[n] = ft
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// TestSchemalessStatusRoundTrips: the apiserver accepts a status whose
// schemaless subtrees are populated and serves them back unchanged.
func TestSchemalessStatusRoundTrips(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	run := sampleRun(ns, "journal")
	if err := env().Client.Create(ctx, run); err != nil {
		t.Fatalf("create: %v", err)
	}
	at := time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)
	started := metav1.NewMicroTime(at.Add(1500 * time.Microsecond))
	confirmed := metav1.NewMicroTime(at.Add(2 * time.Second))
	applied := metav1.NewTime(at.Add(time.Second))
	args := `{"name":"web","replicas":3}`
	run.Status = exagentv1.AgentRunStatus{
		Phase:              exagentv1.PhaseRunning,
		ObservedGeneration: 1,
		Revision:           3,
		Attempts:           1,
		Cursor:             exagentv1.Cursor{Step: 2, Stage: exagentv1.StageBatch, ModelRequest: &exagentv1.ModelRequestIntent{Attempt: 1, Request: 2}},
		Transcript:         &exagentv1.TranscriptHead{Head: "sha256-0123", Segments: 1},
		History: []exagentv1.Message{
			{Role: exagentv1.RoleUser, Content: "scale web to 3"},
			{Role: exagentv1.RoleAssistant, ToolCalls: []exagentv1.MessageToolCall{{ID: "c1", Name: "scale", Arguments: args}}},
			{Role: exagentv1.RoleTool, ToolCallID: "c1", Content: `{"replicas":3}`},
		},
		Calls: []exagentv1.ToolCall{{
			ID:             "c1",
			Step:           1,
			Tool:           "scale",
			Args:           args,
			ArgsHash:       "sha256:aa",
			PayloadHash:    "sha256:bb",
			IdempotencyKey: "uid/c1",
			State:          exagentv1.CallSucceeded,
			Rule:           "ask-big",
			Attempt:        1,
			StartedAt:      &started,
			Outcome:        &exagentv1.CallOutcome{Succeeded: true, Result: `{"replicas":3}`, At: &confirmed},
		}},
		Receipts: []exagentv1.Receipt{{
			OperationID:  "op-1",
			DecisionName: "d1",
			Decision:     string(exagentv1.DecisionApprove),
			Target:       "c1",
			PayloadHash:  "sha256:bb",
			Revision:     2,
			Actor:        &exagentv1.Actor{Username: "alice", Groups: []string{"ops"}, Credential: exagentv1.CredentialCertificate},
			AppliedAt:    &applied,
		}},
	}
	want := run.Status.DeepCopy()
	if err := env().Client.Status().Update(ctx, run); err != nil {
		t.Fatalf("the apiserver refused the status: %v", err)
	}
	var got exagentv1.AgentRun
	if err := env().Client.Get(ctx, client.ObjectKeyFromObject(run), &got); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(*want, got.Status); d != "" {
		t.Errorf("the status did not round-trip (-sent +served):\n%s", d)
	}
}

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

// Command crdschemaless makes the journal subtrees of AgentRun.status
// schemaless in the CRD controller-gen generated (issue 27). make manifests
// runs it right after controller-gen, before hack/chart-files.sh copies the
// CRDs into the chart:
//
//	go run ./hack/crdschemaless config/crd/bases/exagent.io_agentruns.yaml
//
// The kube-apiserver spends most of a status write on the schema: it
// validates (ratcheting), prunes and walks for embedded resources every field
// of the schema present in the object, and the journal (calls, history,
// receipts, …) is most of a long run's status. Only the manager writes that
// status and it keeps it within its own bounds, so each field named in
// v1alpha1.SchemalessStatusFields becomes x-kubernetes-preserve-unknown-fields:
// a list keeps type array, its maxItems and becomes atomic, with items
// {type: object, x-kubernetes-preserve-unknown-fields: true}; an object
// becomes {type: object, x-kubernetes-preserve-unknown-fields: true}.
//
// The Go types stay the single source of the documentation: the description
// of each such field is the one controller-gen generated followed by the
// documentation of its subtree, rendered from the full generated schema (each
// field with its type, its bounds and the first sentence of its description,
// nested by indentation), so kubectl explain agentrun.status.calls still
// documents every field. A field already rewritten is left as it is, so the
// command is idempotent.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// summaryRunes bounds the description of one field in a rendered subtree.
const summaryRunes = 200

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: crdschemaless config/crd/bases/exagent.io_agentruns.yaml")
		os.Exit(2)
	}
	if err := rewrite(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "crdschemaless:", err)
		os.Exit(1)
	}
}

// rewrite rewrites the AgentRun CRD at path in place.
func rewrite(path string) error {
	in, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(in, &crd); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if crd.Spec.Names.Kind != "AgentRun" {
		return fmt.Errorf("%s: the CRD is for %q, not AgentRun", path, crd.Spec.Names.Kind)
	}
	for i := range crd.Spec.Versions {
		v := &crd.Spec.Versions[i]
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			return fmt.Errorf("%s: version %s has no schema", path, v.Name)
		}
		status, ok := v.Schema.OpenAPIV3Schema.Properties["status"]
		if !ok {
			return fmt.Errorf("%s: version %s has no status", path, v.Name)
		}
		for _, name := range exagentv1.SchemalessStatusFields {
			p, ok := status.Properties[name]
			if !ok {
				return fmt.Errorf("%s: version %s: status has no field %q", path, v.Name, name)
			}
			if p, err = schemaless(p); err != nil {
				return fmt.Errorf("%s: version %s: status.%s: %w", path, v.Name, name, err)
			}
			status.Properties[name] = p
		}
		v.Schema.OpenAPIV3Schema.Properties["status"] = status
	}
	out, err := marshal(&crd)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o644)
}

// marshal writes crd as controller-gen does: a document start, no status
// and no creationTimestamp.
func marshal(crd *apiextensionsv1.CustomResourceDefinition) ([]byte, error) {
	b, err := json.Marshal(crd)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	y, err := yaml.Marshal(m)
	if err != nil {
		return nil, err
	}
	return append([]byte("---\n"), y...), nil
}

// isSchemaless: p was rewritten already.
func isSchemaless(p apiextensionsv1.JSONSchemaProps) bool {
	if p.Type == "array" {
		return ptr.Deref(p.XListType, "") == "atomic" && p.Items != nil && p.Items.Schema != nil &&
			p.Items.Schema.XPreserveUnknownFields != nil && *p.Items.Schema.XPreserveUnknownFields &&
			len(p.Items.Schema.Properties) == 0
	}
	return p.XPreserveUnknownFields != nil && *p.XPreserveUnknownFields && len(p.Properties) == 0
}

// schemaless is p without the schema of its subtree, documented in its
// description.
func schemaless(p apiextensionsv1.JSONSchemaProps) (apiextensionsv1.JSONSchemaProps, error) {
	if isSchemaless(p) {
		return p, nil
	}
	if len(objectOf(p).Properties) == 0 {
		return p, errors.New("has no fields to document")
	}
	var doc strings.Builder
	render(&doc, p, 0)
	desc := strings.TrimRight(p.Description, "\n")
	if desc != "" {
		desc += "\n\n"
	}
	desc += exagentv1.SchemalessDocHeader + "\n" + strings.TrimRight(doc.String(), "\n")
	object := apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}
	switch p.Type {
	case "array":
		if p.Items == nil || p.Items.Schema == nil || p.Items.Schema.Type != "object" {
			return p, errors.New("is a list of something other than objects")
		}
		return apiextensionsv1.JSONSchemaProps{
			Description: desc,
			Type:        "array",
			MaxItems:    p.MaxItems,
			Items:       &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &object},
			XListType:   ptr.To("atomic"),
		}, nil
	case "object":
		object.Description = desc
		return object, nil
	default:
		return p, fmt.Errorf("is a %q, neither an object nor a list", p.Type)
	}
}

// objectOf is the object schema whose fields p's subtree has: p's own, its
// list items' or its map values'.
func objectOf(p apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
	switch {
	case len(p.Properties) > 0:
		return p
	case p.Items != nil && p.Items.Schema != nil:
		return objectOf(*p.Items.Schema)
	case p.AdditionalProperties != nil && p.AdditionalProperties.Schema != nil:
		return objectOf(*p.AdditionalProperties.Schema)
	}
	return apiextensionsv1.JSONSchemaProps{}
}

// render writes one line per field of p's subtree, nested by indentation:
// "- name (type, bounds): summary".
func render(b *strings.Builder, p apiextensionsv1.JSONSchemaProps, depth int) {
	obj := objectOf(p)
	fields := obj.Properties
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	slices.Sort(names)
	required := obj.Required
	for _, name := range names {
		f := fields[name]
		attrs := []string{typeOf(f)}
		if slices.Contains(required, name) {
			attrs = append(attrs, "required")
		}
		attrs = append(attrs, bounds(f)...)
		fmt.Fprintf(b, "%s- %s (%s)", strings.Repeat("  ", depth), name, strings.Join(attrs, ", "))
		if s := summary(f.Description); s != "" {
			b.WriteString(": " + s)
		}
		b.WriteString("\n")
		render(b, f, depth+1)
	}
}

// typeOf names p's type: string, int64, []object, map[string]string, JSON, ….
func typeOf(p apiextensionsv1.JSONSchemaProps) string {
	switch {
	case p.XIntOrString:
		return "int-or-string"
	case p.Type == "array" && p.Items != nil && p.Items.Schema != nil:
		return "[]" + typeOf(*p.Items.Schema)
	case p.Type == "object" && p.AdditionalProperties != nil && p.AdditionalProperties.Schema != nil:
		return "map[string]" + typeOf(*p.AdditionalProperties.Schema)
	case p.Type == "":
		return "JSON"
	case p.Format != "":
		return p.Format // int64, date-time, …
	}
	return p.Type
}

// bounds are what the generated schema enforced on p beyond its type.
func bounds(p apiextensionsv1.JSONSchemaProps) []string {
	var out []string
	if p.MinLength != nil && *p.MinLength > 0 {
		out = append(out, "minLength "+strconv.FormatInt(*p.MinLength, 10))
	}
	if p.MaxLength != nil {
		out = append(out, "maxLength "+strconv.FormatInt(*p.MaxLength, 10))
	}
	if p.MaxItems != nil {
		out = append(out, "maxItems "+strconv.FormatInt(*p.MaxItems, 10))
	}
	if p.Minimum != nil {
		out = append(out, "minimum "+strconv.FormatFloat(*p.Minimum, 'g', -1, 64))
	}
	if p.Maximum != nil {
		out = append(out, "maximum "+strconv.FormatFloat(*p.Maximum, 'g', -1, 64))
	}
	if p.Pattern != "" {
		out = append(out, "pattern "+p.Pattern)
	}
	if len(p.Enum) > 0 {
		vals := make([]string, 0, len(p.Enum))
		for _, e := range p.Enum {
			var s string
			if json.Unmarshal(e.Raw, &s) != nil {
				s = string(e.Raw)
			}
			vals = append(vals, s)
		}
		out = append(out, "one of "+strings.Join(vals, "|"))
	}
	return out
}

// abbreviations end in a period that does not end a sentence.
var abbreviations = []string{"e.g.", "i.e.", "etc.", "vs.", "cf."}

// summary is the first sentence of desc's first paragraph on one line,
// at most summaryRunes long.
func summary(desc string) string {
	para, _, _ := strings.Cut(strings.TrimSpace(desc), "\n\n")
	s := strings.Join(strings.Fields(para), " ")
	for i := 0; i < len(s); i++ {
		if s[i] != '.' || i+1 < len(s) && s[i+1] != ' ' {
			continue
		}
		if slices.ContainsFunc(abbreviations, func(a string) bool { return strings.HasSuffix(s[:i+1], " "+a) || s[:i+1] == a }) {
			continue
		}
		s = s[:i+1]
		break
	}
	if utf8.RuneCountInString(s) <= summaryRunes {
		return s
	}
	r := []rune(s)[:summaryRunes]
	cut := string(r)
	if j := strings.LastIndexByte(cut, ' '); j > summaryRunes/2 {
		cut = cut[:j]
	}
	return strings.TrimRight(cut, " ,;:") + "…"
}

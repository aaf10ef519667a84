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

package v1alpha1_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
)

// TestStringBoundsMatchTheCRD: every bound the code writes a string field
// within is the maxLength the generated CRD enforces on that field.
func TestStringBoundsMatchTheCRD(t *testing.T) {
	tests := []struct {
		crd, path string
		max       int
	}{
		{"agentruns", ".status.message", exagentv1.MaxMessageBytes},
		{"agentruns", ".status.approvals[].reason", exagentv1.MaxMessageBytes},
		{"agentruns", ".status.calls[].outcome.evidence", exagentv1.MaxMessageBytes},
		{"approvaldecisions", ".spec.reason", exagentv1.MaxMessageBytes},
		{"approvaldecisions", ".spec.evidence", exagentv1.MaxMessageBytes},
		{"approvaldecisions", ".status.message", exagentv1.MaxMessageBytes},
		{"agentruns", ".status.calls[].id", exagentv1.MaxIDLength},
		{"agentruns", ".status.calls[].tool", exagentv1.MaxIDLength},
		{"agentruns", ".status.approvals[].id", exagentv1.MaxIDLength},
		{"agentruns", ".status.approvals[].callID", exagentv1.MaxIDLength},
		{"agentruns", ".status.history[].toolCalls[].id", exagentv1.MaxIDLength},
		{"agentruns", ".status.history[].toolCalls[].name", exagentv1.MaxIDLength},
		{"agentruns", ".status.history[].toolCallID", exagentv1.MaxIDLength},
		{"agentruns", ".status.calls[].rule", exagentv1.MaxRuleNameLength},
		{"agentruns", ".status.approvals[].rule", exagentv1.MaxRuleNameLength},
		{"agentruns", ".status.approvals[].actor.username", exagentv1.MaxUsernameLength},
		{"agentruns", ".status.calls[].outcome.resolvedBy", exagentv1.MaxUsernameLength},
		{"approvaldecisions", ".spec.actor.username", exagentv1.MaxUsernameLength},
		{"approvaldecisions", ".spec.runUID", exagentv1.MaxRunUIDLength},
		{"agentruns", ".status.children[].message", exagentv1.MaxChildMessageBytes},
		{"agentruns", ".status.calls[].mcp.tool", exagentv1.MaxMCPNameLength},
		{"agentruns", ".status.calls[].mcp.title", exagentv1.MaxMCPNameLength},
		{"agentruns", ".status.calls[].mcp.server", exagentv1.MaxMCPServerLength},
		{"agentruns", ".status.conditions[].message", exagentv1.MaxConditionMessageBytes},
		{"agents", ".status.conditions[].message", exagentv1.MaxConditionMessageBytes},
		{"agentruns", ".status.notifications[].lastError", exagentv1.MaxNotificationErrorBytes},
		{"agentruns", ".status.history[].content", exagentv1.MaxValueBytes},
		{"agentruns", ".status.calls[].args", exagentv1.MaxValueBytes},
		{"agentruns", ".status.calls[].outcome.result", exagentv1.MaxValueBytes},
		{"agentruns", ".status.output", exagentv1.MaxValueBytes},
		{"agentrunsegments", ".spec.values[].data", exagentv1.MaxSegmentValueLength},
	}
	schemas := map[string]*apiextensionsv1.JSONSchemaProps{}
	for _, tc := range tests {
		t.Run(tc.crd+tc.path, func(t *testing.T) {
			s, ok := schemas[tc.crd]
			if !ok {
				s = crdSchema(t, tc.crd)
				schemas[tc.crd] = s
			}
			f := schemaAt(t, s, tc.path)
			if f.Type != "string" || f.MaxLength == nil {
				t.Fatalf("%s %s is a %s with no maxLength", tc.crd, tc.path, f.Type)
			}
			if int(*f.MaxLength) != tc.max {
				t.Errorf("%s %s: the CRD's maxLength is %d, the code's bound %d", tc.crd, tc.path, *f.MaxLength, tc.max)
			}
		})
	}
}

// crdSchema reads the generated CRD exagent.io_<plural>.yaml.
func crdSchema(t *testing.T, plural string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", "exagent.io_"+plural+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(b, &crd); err != nil {
		t.Fatalf("decoding the %s CRD: %v", plural, err)
	}
	return crd.Spec.Versions[0].Schema.OpenAPIV3Schema
}

// schemaAt walks path (".a.b[].c": [] steps into a list's items). In a
// schemaless subtree (SchemalessStatusFields) it walks the documentation
// hack/crdschemaless rendered from the generated schema into the field's
// description: the markers' bounds are still checked against the code's,
// though the manager alone (not the apiserver) now keeps the status within
// them.
func schemaAt(t *testing.T, s *apiextensionsv1.JSONSchemaProps, path string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	steps := strings.Split(strings.TrimPrefix(path, "."), ".")
	for i, step := range steps {
		name, list := strings.CutSuffix(step, "[]")
		p, ok := s.Properties[name]
		if !ok {
			t.Fatalf("no field %q at %s", name, path)
		}
		if i == 1 && steps[0] == "status" && strings.Contains(p.Description, schemalessHeader) {
			return documentedAt(t, parseDoc(t, name, p.Description), steps[i+1:], path)
		}
		s = &p
		if list {
			if s.Items == nil || s.Items.Schema == nil {
				t.Fatalf("%q at %s is not a list", name, path)
			}
			s = s.Items.Schema
		}
	}
	return s
}

// documentedAt is the schema a documented field of a schemaless subtree had:
// its type and maxLength.
func documentedAt(t *testing.T, doc map[string][]string, steps []string, path string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	for i := range steps {
		steps[i] = strings.TrimSuffix(steps[i], "[]")
	}
	attrs := doc[strings.Join(steps, ".")]
	if len(attrs) == 0 {
		t.Fatalf("no documented field at %s", path)
	}
	out := &apiextensionsv1.JSONSchemaProps{Type: attrs[0]}
	for _, a := range attrs[1:] {
		if v, ok := strings.CutPrefix(a, "maxLength "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("%s: %q: %v", path, a, err)
			}
			out.MaxLength = &n
		}
	}
	return out
}

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
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// TestStringBoundsMatchTheCRD: every bound the code writes a string field
// within, or admission checks one against, is the maxLength the generated
// CRD has on that field (in a schemaless subtree: documents for it).
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
		{"approvaldecisions", ".spec.approvalID", exagentv1.MaxIDLength},
		{"approvaldecisions", ".spec.callID", exagentv1.MaxIDLength},
		{"approvaldecisions", ".spec.operationID", exagentv1.MaxOperationIDLength},
		{"agentruns", ".status.receipts[].operationID", exagentv1.MaxOperationIDLength},
		{"agentruns", ".status.approvals[].votes[].operationID", exagentv1.MaxOperationIDLength},
		{"approvaldecisions", ".spec.payloadHash", exagentv1.MaxPayloadHashLength},
		{"agentruns", ".status.calls[].payloadHash", exagentv1.MaxPayloadHashLength},
		{"agentruns", ".status.approvals[].payloadHash", exagentv1.MaxPayloadHashLength},
		{"agentruns", ".spec.input", exagentv1.MaxInputBytes},
		{"agents", ".spec.tools[].name", exagentv1.MaxIDLength},
		{"agents", ".spec.model.script[].toolCalls[].id", exagentv1.MaxIDLength},
		{"agents", ".spec.model.script[].toolCalls[].name", exagentv1.MaxIDLength},
		{"agents", ".status.tools[].message", exagentv1.MaxAgentStatusMessage},
		{"agentruns", ".status.approvals[].question.text", exagentv1.MaxQuestionTextBytes},
		{"agentruns", ".status.approvals[].question.url", exagentv1.MaxQuestionURLLength},
		{"agentruns", ".status.approvals[].question.requestID", exagentv1.MaxQuestionRequestIDLength},
		{"agentruns", ".status.approvals[].question.schema", exagentv1.MaxAnswerSchemaBytes},
		{"agentruns", ".status.calls[].input.requests", exagentv1.MaxInputRequestsBytes},
		{"agentruns", ".status.calls[].input.requestState", exagentv1.MaxInputRequestsBytes},
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

// TestCountBoundsMatchTheCRD: every bound the code keeps a list within, or
// admission checks a number against, is the maxItems or maximum the
// generated CRD has on that field (in a schemaless subtree: documents for
// it; a schemaless list itself keeps its maxItems).
func TestCountBoundsMatchTheCRD(t *testing.T) {
	tests := []struct {
		crd, path, bound string
		max              int64
	}{
		{"agentruns", ".status.history[].toolCalls", "maxItems", exagentv1.MaxToolCallsPerMessage},
		{"agents", ".spec.model.script[].toolCalls", "maxItems", exagentv1.MaxToolCallsPerMessage},
		{"agentruns", ".status.grants", "maxItems", exagentv1.MaxGrants},
		{"agentruns", ".status.children", "maxItems", exagentv1.MaxChildRuns},
		{"agentruns", ".status.notifications", "maxItems", exagentv1.MaxNotificationRecords},
		{"agentruns", ".status.approvals[].votes", "maxItems", exagentv1.MaxQuorumVotes},
		{"agentruns", ".status.approvals[].quorum.approvals", "maximum", exagentv1.MaxQuorumVotes},
		{"agentruns", ".status.approvals[].quorum.groups", "maxItems", exagentv1.MaxQuorumGroups},
		{"agentruns", ".status.approvals[].quorum.groups[].count", "maximum", exagentv1.MaxQuorumVotes},
		{"agentruns", ".status.approvals[].question.choices", "maxItems", exagentv1.MaxQuestionChoices},
		{"agents", ".spec.policy.rules[].quorum.approvals", "maximum", exagentv1.MaxQuorumVotes},
		{"agents", ".spec.policy.rules[].quorum.groups", "maxItems", exagentv1.MaxQuorumGroups},
		{"agents", ".spec.policy.rules[].quorum.groups[].count", "maximum", exagentv1.MaxQuorumVotes},
		{"agents", ".spec.tools", "maxItems", exagentv1.MaxAgentTools},
		{"agents", ".status.tools", "maxItems", exagentv1.MaxAgentTools},
		{"agents", ".spec.notify", "maxItems", exagentv1.MaxNotifySinks},
		{"agents", ".spec.model.rateLimit.requestsPerMinute", "maximum", exagentv1.MaxModelRequestsPerMinute},
		{"agents", ".spec.model.rateLimit.tokensPerMinute", "maximum", exagentv1.MaxModelTokensPerMinute},
		{"agents", ".spec.model.rateLimit.maxConcurrent", "maximum", exagentv1.MaxModelConcurrent},
		{"agents", ".spec.limits.maxRuns", "maximum", exagentv1.MaxTreeRuns},
		{"agents", ".spec.limits.maxDepth", "maximum", exagentv1.MaxDelegationDepth},
		{"agents", ".spec.limits.maxTranscriptBytes", "maximum", exagentv1.MaxTranscriptBytesLimit},
		{"agents", ".spec.retention.keepLast", "maximum", exagentv1.MaxKeepLast},
		{"agentruns", ".spec.delegation.ancestry", "maxItems", exagentv1.MaxDelegationDepth},
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
			var got *int64
			switch tc.bound {
			case "maxItems":
				got = f.MaxItems
			case "maximum":
				if f.Maximum != nil {
					got = ptr.To(int64(*f.Maximum))
				}
			}
			if got == nil {
				t.Fatalf("%s %s has no %s", tc.crd, tc.path, tc.bound)
			}
			if *got != tc.max {
				t.Errorf("%s %s: the CRD's %s is %d, the code's bound %d", tc.crd, tc.path, tc.bound, *got, tc.max)
			}
		})
	}
}

// TestQuestionChoiceBoundMatchesItsMarker: a question's choices' items
// maxLength is the one bound the rendered documentation of a schemaless
// subtree does not carry (it renders a list's own bounds, not its items'),
// so it is read from the marker itself.
func TestQuestionChoiceBoundMatchesItsMarker(t *testing.T) {
	got := fieldMarker(t, "agentrun_types.go", "Question", "Choices", "+kubebuilder:validation:items:MaxLength=")
	if got != exagentv1.MaxQuestionChoiceLength {
		t.Errorf("Question.choices: the marker's items MaxLength is %d, the code's bound %d", got, exagentv1.MaxQuestionChoiceLength)
	}
}

// fieldMarker is the number the marker starting with prefix gives on field
// of struct typ, in the Go file of this package.
func fieldMarker(t *testing.T, file, typ, field, prefix string) int64 {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, spec := range g.Specs {
			ts, ok := spec.(*ast.TypeSpec)
			if !ok || ts.Name.Name != typ {
				continue
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				t.Fatalf("%s is not a struct", typ)
			}
			for _, fl := range st.Fields.List {
				if len(fl.Names) != 1 || fl.Names[0].Name != field || fl.Doc == nil {
					continue
				}
				for _, c := range fl.Doc.List {
					if v, ok := strings.CutPrefix(strings.TrimSpace(strings.TrimPrefix(c.Text, "//")), prefix); ok {
						n, err := strconv.ParseInt(v, 10, 64)
						if err != nil {
							t.Fatalf("%s.%s: %q: %v", typ, field, c.Text, err)
						}
						return n
					}
				}
			}
		}
	}
	t.Fatalf("no marker %s on %s.%s in %s", prefix, typ, field, file)
	return 0
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
	for _, v := range crd.Spec.Versions {
		if v.Name == exagentv1.GroupVersion.Version {
			return v.Schema.OpenAPIV3Schema
		}
	}
	t.Fatalf("the %s CRD has no version %s", plural, exagentv1.GroupVersion.Version)
	return nil
}

// schemaAt walks path (".a.b[].c": [] steps into a list's items). In a
// schemaless subtree (SchemalessStatusFields) it walks the documentation
// hack/crdschemaless rendered from the generated schema into the field's
// description: the markers' bounds are still checked against the code's,
// though the manager alone (not the apiserver) now keeps the status within
// them. A schemaless field itself (".status.grants") is its schema: a list
// keeps its maxItems.
func schemaAt(t *testing.T, s *apiextensionsv1.JSONSchemaProps, path string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	steps := strings.Split(strings.TrimPrefix(path, "."), ".")
	for i, step := range steps {
		name, list := strings.CutSuffix(step, "[]")
		p, ok := s.Properties[name]
		if !ok {
			t.Fatalf("no field %q at %s", name, path)
		}
		if i == 1 && i+1 < len(steps) && steps[0] == "status" && strings.Contains(p.Description, schemalessHeader) {
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
// its type, maxLength, maxItems and maximum.
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
		name, v, ok := strings.Cut(a, " ")
		if !ok {
			continue
		}
		switch name {
		case "maxLength", "maxItems", "maximum":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("%s: %q: %v", path, a, err)
			}
			switch name {
			case "maxLength":
				out.MaxLength = &n
			case "maxItems":
				out.MaxItems = &n
			default:
				out.Maximum = ptr.To(float64(n))
			}
		}
	}
	return out
}

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

package loop

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

func TestCompileArgSchema(t *testing.T) {
	// A real, readable schema file: a file $ref must be refused although
	// loading it would succeed — compiling never does IO.
	dir := t.TempDir()
	local := filepath.Join(dir, "amount.json")
	if err := os.WriteFile(local, []byte(`{"type":"integer"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		schema string
		want   []string // "pointer: message" of each problem; nil = valid
	}{
		"the sample's scale schema": {schema: `{"type":"object","properties":{"name":{"type":"string"},"replicas":{"type":"integer","minimum":0,"maximum":10}},"required":["name","replicas"]}`},
		"local references":          {schema: `{"type":"object","properties":{"a":{"$ref":"#/$defs/n"}},"$defs":{"n":{"type":"integer"}}}`},
		"an $id and a reference to it": {schema: `{"$id":"https://example.com/p.json","type":"object",` +
			`"properties":{"a":{"$ref":"https://example.com/p.json#/$defs/n"}},"$defs":{"n":{"type":"integer"}}}`},
		"draft-07 by $schema (embedded meta-schema)": {schema: `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","definitions":{"n":{"type":"integer"}},"properties":{"a":{"$ref":"#/definitions/n"}}}`},
		"boolean subschemas":                         {schema: `{"type":"object","properties":{"a":true,"b":false},"additionalProperties":false}`},
		"not JSON":                                   {schema: `{`, want: []string{": must be JSON: unexpected EOF"}},
		"meta-schema violations name their place": {
			schema: `{"type":"object","properties":{"amount":{"type":"money"}},"required":"amount"}`,
			want: []string{
				"/properties/amount/type: got string, want array",
				"/properties/amount/type: value must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', 'string'",
				"/required: got string, want array",
			},
		},
		"a pattern Go cannot run": {schema: `{"type":"object","properties":{"a":{"pattern":"(?=x)"}}}`,
			want: []string{"/properties/a/pattern: '(?=x)' is not valid regex: error parsing regexp: invalid or unsupported Perl syntax: `(?=`"}},
		"a missing local reference": {schema: `{"type":"object","properties":{"a":{"$ref":"#/$defs/nope"}}}`,
			want: []string{`: json-pointer in "#/$defs/nope" not found`}},
		"a remote reference": {schema: `{"type":"object","properties":{"a":{"$ref":"https://schemas.example/amount.json"}}}`,
			want: []string{refused("https://schemas.example/amount.json")}},
		"a file reference": {schema: `{"type":"object","properties":{"a":{"$ref":"file://` + local + `"}}}`,
			want: []string{refused("file://" + local)}},
		"a relative reference": {schema: `{"type":"object","properties":{"a":{"$ref":"amount.json"}}}`,
			want: []string{refused("amount.json")}},
		"a relative reference under a remote $id": {schema: `{"$id":"https://schemas.example/p.json","type":"object","properties":{"a":{"$ref":"amount.json"}}}`,
			want: []string{refused("https://schemas.example/amount.json")}},
		"a remote meta-schema": {schema: `{"$schema":"https://schemas.example/meta","type":"object"}`,
			want: []string{refused("https://schemas.example/meta")}},
		"nesting at the bound": {schema: strings.Repeat(`{"items":`, MaxSchemaDepth) + `true` + strings.Repeat(`}`, MaxSchemaDepth)},
		"nesting one level beyond the bound": {schema: strings.Repeat(`{"items":`, MaxSchemaDepth+1) + `true` + strings.Repeat(`}`, MaxSchemaDepth+1),
			want: []string{": nests 65 levels deep, more than 64"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := CompileArgSchema([]byte(tc.schema))
			if diff := cmp.Diff(tc.want, problemKeys(t, err)); diff != "" {
				t.Errorf("problems (-want +got):\n%s\nerror: %v", diff, err)
			}
		})
	}
}

func refused(ref string) string {
	return `: refers to "` + ref + `": a tool's parameters must be self-contained — only references inside the schema ` +
		`(#/$defs/…) and the JSON Schema meta-schemas resolve; remote and file URLs are never loaded`
}

func problemKeys(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var se *SchemaError
	if !errors.As(err, &se) {
		t.Fatalf("error %T %v is not a *SchemaError", err, err)
	}
	var out []string
	for _, p := range se.Problems {
		out = append(out, p.Pointer()+": "+p.Message)
	}
	return out
}

func TestArgSchemaValidate(t *testing.T) {
	sch, err := CompileArgSchema([]byte(`{"type":"object","additionalProperties":false,"properties":{` +
		`"name":{"type":"string","maxLength":5},"replicas":{"type":"integer","minimum":0,"maximum":10},` +
		`"tags":{"type":"array","items":{"enum":["a","b"]}},"a/b":{"type":"boolean"},` +
		`"big":{"type":"integer","maximum":12345678901234567890}},"required":["name","replicas"]}`))
	if err != nil {
		t.Fatal(err)
	}
	many := `{"name":"web","replicas":1,"tags":["x","x","x","x","x","x","x","x","x","x"]}`
	cases := map[string]struct {
		args     string
		want     string // the whole message; "" = valid
		wantMore int
	}{
		"valid":                 {args: `{"name":"web","replicas":3}`},
		"big integers are kept": {args: `{"name":"web","replicas":3,"big":12345678901234567890}`},
		"over maximum":          {args: `{"name":"web","replicas":500}`, want: "at /replicas: maximum: got 500, want 10"},
		// Compared exactly (the validator keeps json.Number), though its
		// message prints both as the same rounded float.
		"a big integer over the maximum, exactly": {args: `{"name":"web","replicas":3,"big":12345678901234567891}`,
			want: "at /big: maximum: got 1.2345678901234567×10¹⁹, want 1.2345678901234567×10¹⁹"},
		"missing and wrong type": {args: `{"replicas":"3"}`,
			want: "at the top level: missing property 'name'; at /replicas: got string, want integer"},
		"unknown property": {args: `{"name":"web","replicas":1,"force":true}`,
			want: "at the top level: additional properties 'force' not allowed"},
		"pointer escaping": {args: `{"name":"web","replicas":1,"a/b":1}`, want: "at /a~1b: got number, want boolean"},
		"not an object":    {args: `[1]`, want: "at the top level: got array, want object"},
		"bounded":          {args: many, wantMore: 2},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := sch.Validate(tc.args)
			if tc.wantMore > 0 {
				var se *SchemaError
				if !errors.As(err, &se) || len(se.Problems) != maxProblems || se.More != tc.wantMore ||
					!strings.HasSuffix(err.Error(), "and 2 more") {
					t.Fatalf("error = %v", err)
				}
				return
			}
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("error = %q, want %q", got, tc.want)
			}
		})
	}
}

// The shipped sample bounds replicas at 10. Arguments are checked before
// policy: even with the policy loosened to Allow, replicas: 500 is a
// failed call the model is told about — never started, never Pending.
func TestSampleScaleMaximumStopsEvenUnderAllow(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "config", "samples", "agent.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var agent exagentv1.Agent
	if err := yaml.UnmarshalStrict(b, &agent); err != nil {
		t.Fatal(err)
	}
	agent.Spec.Policy = exagentv1.PolicySpec{Default: exagentv1.PolicyAllow}
	env := mustEnv(t, &agent.Spec, MakeRun().Spec())

	h := newHarness(t, env).claim(w1)
	h.step()
	h.respond(tools(call("big", "scale_deployment", `{"name":"web","replicas":500}`),
		call("ok", "scale_deployment", `{"name":"web","replicas":3}`)))
	act := h.step()
	if act.Kind != ActRunTools || len(act.Calls) != 1 || act.Calls[0].CallID != "ok" {
		t.Fatalf("action = %+v, want only the valid call to run", act)
	}
	big := h.s.Calls[findCall(&h.s, "big")]
	want := `InvalidArguments: the arguments do not match the parameters schema of tool "scale_deployment": ` +
		`at /replicas: maximum: got 500, want 10. The call was not run.`
	if big.State != exagentv1.CallFailed || big.Outcome == nil || big.Outcome.Result != want ||
		big.IdempotencyKey != "" || big.Rule != "" {
		t.Fatalf("call big = %s %+v key %q rule %q", big.State, big.Outcome, big.IdempotencyKey, big.Rule)
	}
	if h.s.Ledger.ToolCalls != 1 || h.s.PendingApprovals != 0 {
		t.Errorf("ledger.toolCalls %d pending %d: only the valid call counts", h.s.Ledger.ToolCalls, h.s.PendingApprovals)
	}
	h.outcome("ok", ResultSucceeded, "scaled")
	h.step()
	var seen bool
	for _, m := range h.s.History {
		if m.Role == exagentv1.RoleTool && m.ToolCallID == "big" {
			seen = m.Content == "Error: "+want
		}
	}
	if !seen {
		t.Errorf("the model was not told why: %+v", h.s.History)
	}
}

// An Agent whose schema refers outside itself is invalid: no run can be
// evaluated against it (the controller reports InvalidConfiguration).
func TestNewEnvRefusesRemoteRefs(t *testing.T) {
	a := MakeAgent().HTTPTool("pay", false).Schema("pay", `{"type":"object","properties":{"amount":{"$ref":"https://schemas.example/amount.json"}}}`).Spec()
	_, err := NewEnv(EnvInput{RunUID: "u", Agent: a, Run: MakeRun().Spec()})
	if err == nil || !strings.Contains(err.Error(), `tools[0] "pay" parameters: at the top level: refers to "https://schemas.example/amount.json"`) {
		t.Fatalf("NewEnv: %v", err)
	}
}

// BenchmarkNewEnvSchemas measures the schema compile NewEnv does at
// every reconcile, for an Agent like the sample.
func BenchmarkNewEnvSchemas(b *testing.B) {
	a := MakeAgent().HTTPTool("pay", false).HTTPTool("search", false).
		Schema("pay", `{"type":"object","properties":{"name":{"type":"string"},"replicas":{"type":"integer","minimum":0,"maximum":10}},"required":["name","replicas"]}`).Spec()
	for b.Loop() {
		if _, err := NewEnv(EnvInput{RunUID: "u", Agent: a, Run: MakeRun().Spec()}); err != nil {
			b.Fatal(err)
		}
	}
}

// Compiled schemas are shared between Envs (CompileArgSchema memoizes):
// validating from many goroutines at once must be safe (run with -race).
func TestArgSchemaShared(t *testing.T) {
	raw := []byte(`{"type":"object","properties":{"n":{"type":"integer","maximum":10}}}`)
	a, err := CompileArgSchema(raw)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := CompileArgSchema(raw); b != a {
		t.Errorf("the same schema compiled twice")
	}
	done := make(chan error)
	for i := range 8 {
		go func() {
			s, err := CompileArgSchema(raw)
			if err == nil {
				err = s.Validate(fmt.Sprintf(`{"n":%d}`, i*3))
			}
			done <- err
		}()
	}
	invalid := 0
	for range 8 {
		if err := <-done; err != nil {
			invalid++
		}
	}
	if invalid != 4 { // n = 12, 15, 18, 21
		t.Errorf("%d invalid, want 4", invalid)
	}
}

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
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/exagent-io/exagent/internal/canonical"
)

// Tool arguments are checked against the tool's `parameters` JSON Schema
// before policy and before any IO (docs/architecture.md §13), with a maintained
// validator rather than a hand-written one. The Agent webhook compiles the
// schemas with the same function, so what admission accepts is exactly
// what the engine can enforce.

const (
	// MaxSchemaDepth bounds how deeply JSON objects and arrays nest in a
	// parameters schema. The validator's compile time grows much faster
	// than linearly with nesting (a schema 400 levels deep takes seconds),
	// and the engine compiles the schemas at every reconcile; no tool's
	// arguments need more (64 JSON levels are about 32 nested properties).
	MaxSchemaDepth = 64
	// maxProblems bounds how many problems a message lists.
	maxProblems = 8
	// maxProblemText bounds one problem's message.
	maxProblemText = 256
	// maxCompiled and maxCompiledBytes bound the memo of compiled schemas
	// (by count, and by the schemas' size: a compiled schema takes some
	// multiple of its text).
	maxCompiled      = 1024
	maxCompiledBytes = 8 << 20
)

// schemaURL is where a parameters schema is placed for the compiler. A
// hierarchical URL of a scheme nothing can load makes every relative
// reference ("other.json", "/etc/x") resolve to a URL the loader refuses,
// instead of silently to the schema itself.
const schemaURL = "mem:///parameters.json"

// printer renders the validator's messages; they are English either way.
var printer = message.NewPrinter(language.English)

// ArgSchema is a tool's compiled parameters schema. It is immutable and
// safe for concurrent use.
type ArgSchema struct{ sch *jsonschema.Schema }

// SchemaProblem is one reason a schema or an arguments object is not
// valid: where (JSON pointer tokens into the schema or the arguments) and
// what is wrong.
type SchemaProblem struct {
	Location []string
	Message  string
}

// Pointer is the location as a JSON pointer ("" is the whole document).
func (p SchemaProblem) Pointer() string {
	var b strings.Builder
	for _, tok := range p.Location {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// SchemaError lists why a parameters schema cannot be used, or why
// arguments do not match it; at most maxProblems entries, sorted.
type SchemaError struct {
	Problems []SchemaProblem
	// More counts the problems left out.
	More int
}

func (e *SchemaError) Error() string {
	parts := make([]string, 0, len(e.Problems)+1)
	for _, p := range e.Problems {
		at := p.Pointer()
		if at == "" {
			at = "the top level"
		}
		parts = append(parts, "at "+at+": "+p.Message)
	}
	if e.More > 0 {
		parts = append(parts, fmt.Sprintf("and %d more", e.More))
	}
	return strings.Join(parts, "; ")
}

// refuseLoader is the compiler's only loader: a schema is self-contained.
// The JSON Schema meta-schemas are embedded in the library and resolved
// before any loader is asked; every other URL — remote, file or relative —
// is refused, so compiling a schema never does IO.
type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, errRemoteRef
}

var errRemoteRef = errors.New("refused")

// compiled memoizes CompileArgSchema. NewEnv runs at every reconcile and
// a compile takes 40–200 µs for a small schema (the meta-schema check
// dominates), while an Agent's schemas rarely change: the memo makes the
// check cost a hash. It is a memo of a pure function over the schema's
// bytes — no IO, no clock — and compiled schemas are immutable and safe to
// share, so the engine stays a function of its inputs. Bounded: when full
// it starts over.
var compiled = struct {
	sync.Mutex
	m     map[string]*ArgSchema
	bytes int
}{m: map[string]*ArgSchema{}}

// CompileArgSchema compiles raw, a tool's parameters, validating it
// against its JSON Schema meta-schema (draft 2020-12 unless its $schema
// names another draft). A $ref or $schema that would need loading a
// document is an error: only references within the schema and the
// embedded meta-schemas resolve. Errors are *SchemaError.
func CompileArgSchema(raw []byte) (*ArgSchema, error) {
	key := canonical.Hash(raw)
	compiled.Lock()
	s := compiled.m[key]
	compiled.Unlock()
	if s != nil {
		return s, nil
	}
	s, err := compileArgSchema(raw)
	if err != nil {
		return nil, err
	}
	if len(raw) > maxCompiledBytes/8 {
		return s, nil // too large to keep; compiled again next time
	}
	compiled.Lock()
	if len(compiled.m) >= maxCompiled || compiled.bytes+len(raw) > maxCompiledBytes {
		compiled.m, compiled.bytes = map[string]*ArgSchema{}, 0
	}
	if compiled.m[key] == nil {
		compiled.m[key] = s
		compiled.bytes += len(raw)
	}
	compiled.Unlock()
	return s, nil
}

func compileArgSchema(raw []byte) (*ArgSchema, error) {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(raw)))
	if err != nil {
		return nil, &SchemaError{Problems: []SchemaProblem{{Message: "must be JSON: " + err.Error()}}}
	}
	if d := jsonDepth(doc); d > MaxSchemaDepth {
		return nil, &SchemaError{Problems: []SchemaProblem{{
			Message: fmt.Sprintf("nests %d levels deep, more than %d", d, MaxSchemaDepth)}}}
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refuseLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, compileError(err)
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		return nil, compileError(err)
	}
	return &ArgSchema{sch: sch}, nil
}

// Validate checks canonical JSON arguments; an error is a *SchemaError
// whose locations are in the arguments.
func (a *ArgSchema) Validate(args string) error {
	if args == "" {
		args = "{}"
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(args))
	if err != nil {
		return &SchemaError{Problems: []SchemaProblem{{Message: "not JSON: " + err.Error()}}}
	}
	err = a.sch.Validate(v)
	var ve *jsonschema.ValidationError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ve):
		return problems(ve)
	}
	return &SchemaError{Problems: []SchemaProblem{{Message: bound(err.Error(), maxProblemText)}}}
}

// compileError turns the compiler's error into problems located in the
// schema.
func compileError(err error) *SchemaError {
	var sve *jsonschema.SchemaValidationError
	var ve *jsonschema.ValidationError
	if errors.As(err, &sve) && errors.As(sve.Err, &ve) {
		return problems(ve)
	}
	var le *jsonschema.LoadURLError
	if errors.As(err, &le) {
		ref := strings.TrimPrefix(le.URL, "mem:///")
		return &SchemaError{Problems: []SchemaProblem{{Message: fmt.Sprintf(
			"refers to %q: a tool's parameters must be self-contained — only references inside the schema (#/$defs/…) "+
				"and the JSON Schema meta-schemas resolve; remote and file URLs are never loaded", bound(ref, maxProblemText))}}}
	}
	msg := strings.ReplaceAll(err.Error(), schemaURL, "")
	return &SchemaError{Problems: []SchemaProblem{{Message: bound(msg, maxProblemText)}}}
}

// problems lists the leaves of a validation error tree (the specific
// failures; inner nodes only say "allOf failed"), sorted and bounded.
func problems(root *jsonschema.ValidationError) *SchemaError {
	seen := map[string]bool{}
	var all []SchemaProblem
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		p := SchemaProblem{Location: append([]string(nil), e.InstanceLocation...),
			Message: bound(strings.ReplaceAll(e.ErrorKind.LocalizedString(printer), schemaURL, ""), maxProblemText)}
		if key := p.Pointer() + "\x00" + p.Message; !seen[key] {
			seen[key] = true
			all = append(all, p)
		}
	}
	walk(root)
	// The validator walks maps in no fixed order: sort, so one input
	// always gives one message.
	sort.Slice(all, func(i, j int) bool {
		if pi, pj := all[i].Pointer(), all[j].Pointer(); pi != pj {
			return pi < pj
		}
		return all[i].Message < all[j].Message
	})
	out := &SchemaError{Problems: all}
	if len(all) > maxProblems {
		out.Problems, out.More = all[:maxProblems], len(all)-maxProblems
	}
	return out
}

// jsonDepth is how deeply objects and arrays nest in v (a scalar is 0).
func jsonDepth(v any) int {
	d := 0
	switch t := v.(type) {
	case map[string]any:
		for _, e := range t {
			d = max(d, jsonDepth(e))
		}
		return d + 1
	case []any:
		for _, e := range t {
			d = max(d, jsonDepth(e))
		}
		return d + 1
	}
	return 0
}

// checkArgs validates a call's canonical args against its tool's schema.
func (e *Env) checkArgs(tool, args string) error {
	s := e.argSchemas[tool]
	if s == nil {
		return nil // not a tool of this Agent: the caller says so first
	}
	return s.Validate(args)
}

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

package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/canonical"
	"github.com/exagent-io/exagent/loop"
)

// schemaMapKeywords hold a map from names to schemas: their members are
// keys (properties[amount]), not fields, in the error's path.
var schemaMapKeywords = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}

// validateParameters checks a tool's parameters the way the engine will use
// them: compiled by loop.CompileArgSchema (the JSON Schema library the
// engine validates arguments with), which checks the schema against its
// meta-schema, compiles every pattern and resolves every $ref — and
// refuses a $ref or $schema that would need loading a remote or file URL.
// Two rules beyond the meta-schema, documented on the Agent's
// spec.tools[].parameters: the schema is a JSON object with type "object"
// (the model always passes an arguments object, and OpenAI-compatible
// endpoints require an object schema), and it nests at most
// loop.MaxSchemaDepth levels.
func validateParameters(path *field.Path, raw []byte) field.ErrorList {
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return field.ErrorList{field.Invalid(path, field.OmitValueType{}, fmt.Sprintf("must be JSON: %v", err))}
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return field.ErrorList{field.Invalid(path, field.OmitValueType{}, "must be a JSON Schema object")}
	}
	switch t, ok := obj["type"]; {
	case !ok:
		return field.ErrorList{field.Required(path.Child("type"), `a tool's parameters must be an object schema: type "object"`)}
	case t != "object":
		return field.ErrorList{field.Invalid(path.Child("type"), shown(t),
			`a tool's parameters must be an object schema: type must be "object"`)}
	}
	return compileSchema(path, raw, doc)
}

// validateAnswerSchema checks an AskHuman tool's answerSchema: a JSON
// Schema of any type the validator compiles, small enough to be journaled
// with every question.
func validateAnswerSchema(path *field.Path, raw []byte) field.ErrorList {
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return field.ErrorList{field.Invalid(path, field.OmitValueType{}, fmt.Sprintf("must be JSON: %v", err))}
	}
	switch doc.(type) {
	case map[string]any, bool:
	default:
		return field.ErrorList{field.Invalid(path, field.OmitValueType{}, "must be a JSON Schema (an object)")}
	}
	if canon, err := canonical.JSON(json.RawMessage(raw)); err == nil && len(canon) > exagentv1.MaxAnswerSchemaBytes {
		return field.ErrorList{field.TooLong(path, "", exagentv1.MaxAnswerSchemaBytes)}
	}
	return compileSchema(path, raw, doc)
}

// compileSchema compiles raw as the engine does and turns its findings
// into field errors located in the schema.
func compileSchema(path *field.Path, raw []byte, doc any) field.ErrorList {
	_, err := loop.CompileArgSchema(raw)
	if err == nil {
		return nil
	}
	var se *loop.SchemaError
	if !errors.As(err, &se) {
		return field.ErrorList{field.Invalid(path, field.OmitValueType{}, err.Error())}
	}
	// One error per place in the schema, its findings joined: an anyOf in
	// the meta-schema reports each alternative it tried.
	var errs field.ErrorList
	byPlace := map[string]int{}
	for _, p := range se.Problems {
		key := p.Pointer()
		if i, ok := byPlace[key]; ok {
			errs[i].Detail += "; " + p.Message
			continue
		}
		byPlace[key] = len(errs)
		errs = append(errs, field.Invalid(schemaPath(path, p.Location), shown(lookup(doc, p.Location)), p.Message))
	}
	if se.More > 0 {
		errs = append(errs, field.Invalid(path, field.OmitValueType{}, fmt.Sprintf("and %d more problems", se.More)))
	}
	return errs
}

// schemaPath extends path along JSON pointer tokens into the schema:
// members of a map of schemas are keys, array members indexes, the rest
// fields — spec.tools[0].parameters.properties[amount].type.
func schemaPath(path *field.Path, tokens []string) *field.Path {
	parent := ""
	for _, tok := range tokens {
		n, err := strconv.Atoi(tok)
		switch {
		case slices.Contains(schemaMapKeywords, parent):
			path = path.Key(tok)
			tok = "" // a property named like a keyword is not one
		case err == nil && n >= 0:
			path = path.Index(n)
		default:
			path = path.Child(tok)
		}
		parent = tok
	}
	return path
}

// lookup returns the value at tokens in doc, or nil.
func lookup(doc any, tokens []string) any {
	for _, tok := range tokens {
		switch t := doc.(type) {
		case map[string]any:
			doc = t[tok]
		case []any:
			n, err := strconv.Atoi(tok)
			if err != nil || n < 0 || n >= len(t) {
				return nil
			}
			doc = t[n]
		default:
			return nil
		}
	}
	return doc
}

// shown is what an error prints as the offending value: scalars as they
// are, objects and arrays not at all (they can be large; the path says
// where they are).
func shown(v any) any {
	switch t := v.(type) {
	case string:
		if len(t) > 64 {
			return strings.ToValidUTF8(t[:64], "") + "…"
		}
		return t
	case bool, float64:
		return t
	}
	return field.OmitValueType{}
}

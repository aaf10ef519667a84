package webhook

import (
	"encoding/json"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxSchemaDepth bounds how deeply nested a parameters schema may be: the
// check recurses, and no tool's arguments need more.
const maxSchemaDepth = 32

var jsonTypes = []string{"array", "boolean", "integer", "null", "number", "object", "string"}

// Keywords whose value is a schema, an array of schemas or a map of
// schemas. Other keywords are checked for their JSON type below or passed
// through: JSON Schema allows unknown keywords.
var (
	schemaKeywords      = []string{"not", "if", "then", "else", "contains", "propertyNames", "additionalItems", "unevaluatedItems", "unevaluatedProperties"}
	schemaListKeywords  = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
	schemaMapKeywords   = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
	stringKeywords      = []string{"title", "description", "pattern", "format", "$ref", "$id", "$schema", "$comment"}
	countKeywords       = []string{"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "minContains", "maxContains"}
	numberKeywords      = []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
	schemaOrBoolKeyword = []string{"additionalProperties", "items"}
)

// validateParameters checks that raw is a JSON Schema for a tool's
// arguments: a JSON object whose type is "object" (the model passes an
// arguments object), with well-formed keywords all the way down. It is a
// structural check of the schema, not a full meta-schema validation: it
// catches what breaks a model request or the argument check — a schema
// that is not an object, wrong keyword types, unknown type names.
func validateParameters(path *field.Path, raw []byte) field.ErrorList {
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return field.ErrorList{field.Invalid(path, "", fmt.Sprintf("must be JSON: %v", err))}
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return field.ErrorList{field.Invalid(path, "", "must be a JSON Schema object")}
	}
	switch t, ok := obj["type"]; {
	case !ok:
		return field.ErrorList{field.Required(path.Child("type"), `a tool's parameters must be an object schema: type "object"`)}
	case t != "object":
		return field.ErrorList{field.Invalid(path.Child("type"), fmt.Sprint(t),
			`a tool's parameters must be an object schema: type must be "object"`)}
	}
	return validateSchema(path, obj, 0)
}

func validateSchema(path *field.Path, v any, depth int) field.ErrorList {
	if depth > maxSchemaDepth {
		return field.ErrorList{field.Invalid(path, "", fmt.Sprintf("schema nests deeper than %d levels", maxSchemaDepth))}
	}
	if _, ok := v.(bool); ok { // true / false are schemas too
		return nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return field.ErrorList{field.Invalid(path, "", "must be a schema (a JSON object or a boolean)")}
	}
	var errs field.ErrorList
	for _, key := range sortedKeys(obj) {
		val, p := obj[key], path.Child(key)
		switch {
		case key == "type":
			errs = append(errs, validateType(p, val)...)
		case key == "required":
			errs = append(errs, validateStringSet(p, val)...)
		case key == "enum":
			if l, ok := val.([]any); !ok || len(l) == 0 {
				errs = append(errs, field.Invalid(p, "", "must be a non-empty array"))
			}
		case slices.Contains(schemaKeywords, key) || slices.Contains(schemaOrBoolKeyword, key):
			if l, ok := val.([]any); ok && key == "items" { // draft-07 tuple form
				for i, s := range l {
					errs = append(errs, validateSchema(p.Index(i), s, depth+1)...)
				}
				continue
			}
			errs = append(errs, validateSchema(p, val, depth+1)...)
		case slices.Contains(schemaListKeywords, key):
			l, ok := val.([]any)
			if !ok || len(l) == 0 {
				errs = append(errs, field.Invalid(p, "", "must be a non-empty array of schemas"))
				continue
			}
			for i, s := range l {
				errs = append(errs, validateSchema(p.Index(i), s, depth+1)...)
			}
		case slices.Contains(schemaMapKeywords, key):
			m, ok := val.(map[string]any)
			if !ok {
				errs = append(errs, field.Invalid(p, "", "must be an object of schemas"))
				continue
			}
			for _, k := range sortedKeys(m) {
				errs = append(errs, validateSchema(p.Key(k), m[k], depth+1)...)
			}
		case slices.Contains(stringKeywords, key):
			if _, ok := val.(string); !ok {
				errs = append(errs, field.Invalid(p, "", "must be a string"))
			}
		case slices.Contains(countKeywords, key):
			if n, ok := val.(float64); !ok || n < 0 || n != float64(int64(n)) {
				errs = append(errs, field.Invalid(p, "", "must be a non-negative integer"))
			}
		case slices.Contains(numberKeywords, key):
			if _, ok := val.(float64); !ok {
				errs = append(errs, field.Invalid(p, "", "must be a number"))
			}
		}
	}
	return errs
}

func validateType(path *field.Path, v any) field.ErrorList {
	switch t := v.(type) {
	case string:
		if !slices.Contains(jsonTypes, t) {
			return field.ErrorList{field.NotSupported(path, t, jsonTypes)}
		}
		return nil
	case []any:
		if len(t) == 0 {
			return field.ErrorList{field.Invalid(path, "", "must name at least one type")}
		}
		var errs field.ErrorList
		for i, e := range t {
			s, ok := e.(string)
			if !ok || !slices.Contains(jsonTypes, s) {
				errs = append(errs, field.NotSupported(path.Index(i), fmt.Sprint(e), jsonTypes))
			}
		}
		return errs
	}
	return field.ErrorList{field.Invalid(path, "", "must be a type name or an array of type names")}
}

func validateStringSet(path *field.Path, v any) field.ErrorList {
	l, ok := v.([]any)
	if !ok {
		return field.ErrorList{field.Invalid(path, "", "must be an array of property names")}
	}
	seen := map[string]bool{}
	var errs field.ErrorList
	for i, e := range l {
		s, ok := e.(string)
		switch {
		case !ok:
			errs = append(errs, field.Invalid(path.Index(i), "", "must be a string"))
		case seen[s]:
			errs = append(errs, field.Duplicate(path.Index(i), s))
		}
		seen[s] = true
	}
	return errs
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

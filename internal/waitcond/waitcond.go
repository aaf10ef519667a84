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

// Package waitcond parses and evaluates the condition of a WaitFor call
// (DESIGN §20): a status condition Type=Status, the word Current (kstatus),
// or a CEL expression over the object as self. Pure: the engine parses a
// condition when the call is admitted (the model is told a bad one at
// once), the controller evaluates it on objects it read as the run's
// ServiceAccount. The model writes the condition and whoever may edit the
// object writes what it is evaluated on: evaluation is bounded in cost and
// time.
package waitcond

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"cel.dev/cel-go/cel"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

const (
	// MaxLength is the longest condition accepted (WaitedObject.condition).
	MaxLength = 4096
	// celCostLimit bounds one evaluation (cel-go's cost units): enough to
	// look through an object's status, not to loop over a huge list.
	celCostLimit = 1_000_000
	// celTimeout bounds one evaluation in wall time.
	celTimeout = 100 * time.Millisecond
	// Current is the kstatus condition word.
	Current = "Current"
)

// typeStatusRE is Type=Status: a condition type as Kubernetes allows it
// (a qualified name) and one of the three statuses.
var typeStatusRE = regexp.MustCompile(`^([A-Za-z0-9][-A-Za-z0-9_./]{0,315})=(True|False|Unknown)$`)

// Condition is a parsed condition.
type Condition struct {
	src              string
	condType, status string
	current          bool
	prg              cel.Program
}

// Parse parses a condition; the error says why it is not one, in words
// meant for the model.
func Parse(src string) (*Condition, error) {
	src = strings.TrimSpace(src)
	switch {
	case src == "":
		return nil, fmt.Errorf("condition is required: Type=Status (Available=True), Current, or a CEL expression over the object as self")
	case len(src) > MaxLength:
		return nil, fmt.Errorf("condition is %d bytes long: at most %d", len(src), MaxLength)
	case src == Current:
		return &Condition{src: src, current: true}, nil
	}
	if m := typeStatusRE.FindStringSubmatch(src); m != nil {
		return &Condition{src: src, condType: m[1], status: m[2]}, nil
	}
	prg, err := compile(src)
	if err != nil {
		return nil, fmt.Errorf("condition %q is neither Type=Status (Available=True), Current, nor a CEL expression over self returning a bool: %v",
			clip(src, 200), err)
	}
	return &Condition{src: src, prg: prg}, nil
}

// compile compiles a CEL expression over self that must yield a bool.
func compile(src string) (cel.Program, error) {
	env, err := cel.NewEnv(cel.Variable("self", cel.DynType))
	if err != nil {
		return nil, fmt.Errorf("CEL environment: %w", err)
	}
	ast, iss := env.Compile(src)
	if iss.Err() != nil {
		return nil, iss.Err()
	}
	if t := ast.OutputType(); t != cel.BoolType && t != cel.DynType {
		return nil, fmt.Errorf("the expression yields %s, not a bool", t)
	}
	prg, err := env.Program(ast, cel.CostLimit(celCostLimit), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, fmt.Errorf("CEL program: %w", err)
	}
	return prg, nil
}

// String is the condition as written.
func (c *Condition) String() string { return c.src }

// Met evaluates the condition on obj. met false with a nil error is "not
// yet" (the object may still change: a missing field, a condition not yet
// reported, a CEL error such as no such key on a fresh object). An error
// is a condition that can never be evaluated on such an object (a CEL
// expression that does not yield a bool, its cost exceeded): waiting longer
// would not help, the model must be told.
func (c *Condition) Met(ctx context.Context, obj *unstructured.Unstructured) (bool, error) {
	switch {
	case c.current:
		res, err := status.Compute(obj)
		if err != nil {
			return false, nil // kstatus cannot tell yet: not Current
		}
		return res.Status == status.CurrentStatus, nil
	case c.prg == nil:
		return hasCondition(obj, c.condType, c.status), nil
	}
	ctx, cancel := context.WithTimeout(ctx, celTimeout)
	defer cancel()
	out, _, err := c.prg.ContextEval(ctx, map[string]any{"self": obj.Object})
	if err != nil {
		if strings.Contains(err.Error(), "cost") || strings.Contains(err.Error(), "interrupt") || ctx.Err() != nil {
			return false, fmt.Errorf("evaluating %q over %s %s: %w", clip(c.src, 200), obj.GetKind(), obj.GetName(), err)
		}
		return false, nil // e.g. no such key: the object may still get it
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("%q yields %s over %s %s, not a bool", clip(c.src, 200), out.Type().TypeName(), obj.GetKind(), obj.GetName())
	}
	return b, nil
}

// hasCondition reports whether obj's status.conditions has one of type t
// with status s.
func hasCondition(obj *unstructured.Unstructured, t, s string) bool {
	conds, found, err := unstructured.NestedSlice(obj.Object, "status", "conditions")
	if err != nil || !found {
		return false
	}
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		if m["type"] == t {
			return m["status"] == s
		}
	}
	return false
}

// clip cuts s to at most n bytes for a message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

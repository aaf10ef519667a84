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

package trigger

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"

	"cel.dev/cel-go/cel"
)

// An AgentTrigger's input and dedupKey are CEL string expressions over
// the event (the variable event: a webhook's JSON body, an alert, a
// Kubernetes Event) — never a template, whose functions and loops a
// hostile body could steer. The trigger's author writes the expression;
// the event is attacker input, so evaluation is bounded in cost and
// time, and the result in size.
const (
	// exprCostLimit bounds one evaluation (cel-go's cost units): enough
	// for string work over a few KiB, not for a loop over a large body.
	exprCostLimit = 1_000_000
	// exprTimeout bounds one evaluation in wall time.
	exprTimeout = 100 * time.Millisecond
)

// Expr is a compiled string expression over event.
type Expr struct {
	src string
	prg cel.Program
}

// Compile compiles src, which must yield a string. The error says why,
// for admission to put on the field.
func Compile(src string) (*Expr, error) {
	env, err := cel.NewEnv(cel.Variable("event", cel.DynType))
	if err != nil {
		return nil, fmt.Errorf("CEL environment: %w", err)
	}
	ast, iss := env.Compile(src)
	if iss.Err() != nil {
		return nil, iss.Err()
	}
	if t := ast.OutputType(); t != cel.StringType && t != cel.DynType {
		return nil, fmt.Errorf("the expression yields %s, not a string (wrap it in string(…))", t)
	}
	prg, err := env.Program(ast, cel.CostLimit(exprCostLimit), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, fmt.Errorf("CEL program: %w", err)
	}
	return &Expr{src: src, prg: prg}, nil
}

// Render evaluates the expression over event: a string of at most
// maxBytes (longer is an error, never silently cut: a cut input would
// be a different request).
func (e *Expr) Render(ctx context.Context, event any, maxBytes int) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, exprTimeout)
	defer cancel()
	out, _, err := e.prg.ContextEval(ctx, map[string]any{"event": event})
	if err != nil {
		return "", fmt.Errorf("evaluating %q over the event: %w", e.src, err)
	}
	s, ok := out.Value().(string)
	if !ok {
		return "", fmt.Errorf("%q yielded %s over the event, not a string", e.src, out.Type().TypeName())
	}
	if len(s) > maxBytes {
		return "", fmt.Errorf("%q yielded %d bytes over the event: at most %d", e.src, len(s), maxBytes)
	}
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("%q yielded text that is not UTF-8", e.src)
	}
	return s, nil
}

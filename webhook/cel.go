package webhook

import (
	"fmt"
	"sync"

	"cel.dev/cel-go/cel"
)

// whenEnv is the CEL environment of a policy rule's when: one variable,
// args, the call's arguments as decoded JSON (dyn). It is built once; Env is
// safe for concurrent use.
var whenEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(cel.Variable("args", cel.DynType))
})

// compileWhen reports why expr is not a usable when condition: it must
// compile against args and yield a bool. A dyn result (args.dryRun) is
// accepted — its type is only known at evaluation, where a non-bool makes
// the rule fail to evaluate, which the engine treats as Ask.
func compileWhen(expr string) error {
	env, err := whenEnv()
	if err != nil {
		return fmt.Errorf("building the CEL environment: %w", err)
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return iss.Err()
	}
	out := ast.OutputType()
	if !out.IsExactType(cel.BoolType) && !out.IsExactType(cel.DynType) {
		return fmt.Errorf("must evaluate to a bool, not %s", out)
	}
	return nil
}

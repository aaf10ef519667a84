package model

import (
	"context"
	"errors"

	"github.com/exagent-io/exagent/loop"
)

// Provider sends one model request. Implementations must be safe for
// concurrent use: the executor calls them from many goroutines.
type Provider interface {
	Complete(ctx context.Context, req loop.ModelRequest) (loop.ModelResponse, error)
}

// ErrScriptExhausted is returned by Scripted when a run asks for a turn past
// the end of its script; the controller fails the run with ScriptExhausted.
var ErrScriptExhausted = errors.New("script exhausted")

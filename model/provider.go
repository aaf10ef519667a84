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

// capTokens is the response-token cap of a request: the model's own
// setting, lowered to the request's MaxTokens (a sampling request's) when
// that is smaller; nil when neither sets one.
func capTokens(model *int64, request int64) *int64 {
	switch {
	case request <= 0:
		return model
	case model != nil && *model > 0 && *model < request:
		return model
	}
	return &request
}

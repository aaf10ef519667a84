//go:build chaos

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

package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/loop"
)

// FailpointsEnv lists the failpoints of a chaos build (test/chaos):
// comma-separated WINDOW=block@SELECTOR entries. At its window a failpoint
// logs "failpoint reached" (with the window and the selector) and blocks
// the goroutine until its context ends, so the fault suite can SIGKILL the
// process in that exact window. Each entry fires once.
//
// Windows and what SELECTOR matches:
//
//	before-intent-commit, after-intent-commit   tool intents of run NAMESPACE/NAME
//	after-tool-effect                           a tool result of run NAMESPACE/NAME, before the owner gets it
//	before-model-request                        a model request of run NAMESPACE/NAME, its intent committed, nothing sent
//	after-model-response                        a model answer of run NAMESPACE/NAME, before the owner gets it
//	builtin-response                            a mutating apiserver request whose URL path contains SELECTOR:
//	                                            forwarded (the effect lands), its response held
const FailpointsEnv = "EXAGENT_FAILPOINTS"

type failpoint struct {
	window, selector string
	once             sync.Once
}

// fire blocks, once, when the window and selector match.
func (f *failpoint) fire(ctx context.Context, window, selector string) {
	if f.window != window || f.selector != selector {
		return
	}
	fired := false
	f.once.Do(func() { fired = true })
	if !fired {
		return
	}
	ctrl.Log.WithName("failpoint").Info("failpoint reached; blocking", "window", window, "selector", selector)
	<-ctx.Done()
}

func parseFailpoints(spec string) ([]*failpoint, error) {
	var out []*failpoint
	for _, e := range strings.Split(spec, ",") {
		if e = strings.TrimSpace(e); e == "" {
			continue
		}
		window, rest, ok := strings.Cut(e, "=")
		action, selector, _ := strings.Cut(rest, "@")
		if !ok || action != "block" || selector == "" {
			return nil, fmt.Errorf("%s: entry %q: want WINDOW=block@SELECTOR", FailpointsEnv, e)
		}
		switch window {
		case "before-intent-commit", "after-intent-commit", "after-tool-effect", "before-model-request", "after-model-response", "builtin-response":
		default:
			return nil, fmt.Errorf("%s: unknown window %q", FailpointsEnv, window)
		}
		out = append(out, &failpoint{window: window, selector: selector})
	}
	return out, nil
}

// failpoints installs the failpoints of EXAGENT_FAILPOINTS: controller
// hooks, and a transport wrapper on cfg for builtin-response.
func failpoints(cfg *rest.Config) (controllers.Hooks, error) {
	fps, err := parseFailpoints(os.Getenv(FailpointsEnv))
	if err != nil || len(fps) == 0 {
		return controllers.Hooks{}, err
	}
	ctrl.Log.WithName("failpoint").Info("failpoints armed", "spec", os.Getenv(FailpointsEnv))
	at := func(ctx context.Context, window string, run types.NamespacedName) {
		for _, f := range fps {
			f.fire(ctx, window, run.String())
		}
	}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return holdResponse{rt: rt, fps: fps} })
	return controllers.Hooks{
		BeforeIntentCommit: func(ctx context.Context, run types.NamespacedName, _ []loop.ToolInvocation) {
			at(ctx, "before-intent-commit", run)
		},
		AfterIntentCommit: func(ctx context.Context, run types.NamespacedName, _ []loop.ToolInvocation) {
			at(ctx, "after-intent-commit", run)
		},
		AfterEffect: func(ctx context.Context, run types.NamespacedName, _ loop.ToolResult) {
			at(ctx, "after-tool-effect", run)
		},
		BeforeModelRequest: func(ctx context.Context, run types.NamespacedName) { at(ctx, "before-model-request", run) },
		AfterModelResponse: func(ctx context.Context, run types.NamespacedName) { at(ctx, "after-model-response", run) },
	}, nil
}

// holdResponse forwards a matching mutation, then holds its response: the
// effect has landed and the caller has not heard of it.
type holdResponse struct {
	rt  http.RoundTripper
	fps []*failpoint
}

func (h holdResponse) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := h.rt.RoundTrip(req)
	if req.Method == http.MethodGet {
		return resp, err
	}
	for _, f := range h.fps {
		if f.window == "builtin-response" && strings.Contains(req.URL.Path, f.selector) {
			f.fire(req.Context(), "builtin-response", f.selector)
		}
	}
	if req.Context().Err() != nil {
		if resp != nil {
			_ = resp.Body.Close()
		}
		return nil, req.Context().Err()
	}
	return resp, err
}

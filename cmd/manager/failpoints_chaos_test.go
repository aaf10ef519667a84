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
	"testing"
)

func TestParseFailpoints(t *testing.T) {
	fps, err := parseFailpoints("after-intent-commit=block@ns/run, builtin-response=block@deployments/web")
	if err != nil || len(fps) != 2 || fps[0].window != "after-intent-commit" || fps[0].selector != "ns/run" ||
		fps[1].window != "builtin-response" || fps[1].selector != "deployments/web" {
		t.Fatalf("parsed %+v, %v", fps, err)
	}
	for _, bad := range []string{"after-intent-commit=block", "after-intent-commit=crash@ns/r", "nowhere=block@ns/r"} {
		if _, err := parseFailpoints(bad); err == nil {
			t.Errorf("%q parsed without an error", bad)
		}
	}
}

// TestFailpointFiresOnce: the first matching hit blocks until its context
// ends; later hits and other selectors pass through.
func TestFailpointFiresOnce(t *testing.T) {
	fps, err := parseFailpoints("before-model-request=block@ns/r")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		fps[0].fire(ctx, "before-model-request", "ns/r")
		close(done)
	}()
	fps[0].fire(context.Background(), "before-model-request", "ns/other") // another run: no block
	select {
	case <-done:
		t.Fatal("the failpoint did not block")
	default:
	}
	cancel()
	<-done
	fps[0].fire(context.Background(), "before-model-request", "ns/r") // fired already: no block
}

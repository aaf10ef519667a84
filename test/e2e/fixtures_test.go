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

package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// scaleAgent is an Agent on the Scripted model whose first turn asks for one
// scale_deployment call per args (ids c1, c2, …) and whose second turn ends
// the run; the policy asks before every scale. It uses the samples'
// ServiceAccount and Role, so apply samples(ns) first.
func scaleAgent(ns, name string, args ...string) string {
	var calls strings.Builder
	for i, a := range args {
		fmt.Fprintf(&calls, "      - id: c%d\n        name: scale_deployment\n        arguments: %s\n", i+1, a)
	}
	return fmt.Sprintf(`apiVersion: exagent.io/v1beta1
kind: Agent
metadata:
  name: %s
  namespace: %s
spec:
  model:
    provider: Scripted
    script:
    - toolCalls:
%s    - text: done
  tools:
  - name: scale_deployment
    parameters: {type: object, properties: {name: {type: string}, replicas: {type: integer}}, required: [name, replicas]}
    builtin: {operation: Scale, kinds: [Deployment.apps]}
  policy:
    default: Deny
    rules:
    - {name: ask-before-scaling, tools: [scale_deployment], action: Ask}
`, name, ns, calls.String())
}

// httpAgent is an Agent whose first turn calls the http tool "charge" at
// url once and whose second turn ends the run; action is the policy for it.
func httpAgent(ns, name, url, action, timeout string) string {
	return fmt.Sprintf(`apiVersion: exagent.io/v1beta1
kind: Agent
metadata:
  name: %s
  namespace: %s
spec:
  model:
    provider: Scripted
    script:
    - toolCalls:
      - id: charge-1
        name: charge
        arguments: {customer: c-42, amount: 5}
    - text: charged
  tools:
  - name: charge
    parameters: {type: object, properties: {customer: {type: string}, amount: {type: integer}}}
    http: {url: %q, timeout: %s}
  policy:
    default: Deny
    rules:
    - {name: charges, tools: [charge], action: %s}
`, name, ns, url, timeout, action)
}

// runYAML is an AgentRun of agent acting as the samples' ServiceAccount.
func runYAML(ns, name, agent string) string {
	return fmt.Sprintf(`apiVersion: exagent.io/v1beta1
kind: AgentRun
metadata:
  name: %s
  namespace: %s
spec:
  agentRef: {name: %s}
  input: go
  serviceAccountName: ops-agent
`, name, ns, agent)
}

// effectServer is a real HTTP endpoint standing in for a payment API: it
// records every request's Idempotency-Key. With hang set it never answers,
// so the caller times out after sending — an unknown outcome.
type effectServer struct {
	*httptest.Server
	mu      sync.Mutex
	keys    []string
	bodies  []string
	hang    bool
	release chan struct{} // closed at cleanup: hanging handlers return
}

func newEffectServer(t *testing.T, hang bool) *effectServer {
	e := &effectServer{hang: hang, release: make(chan struct{})}
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16))
		e.mu.Lock()
		e.keys = append(e.keys, r.Header.Get("Idempotency-Key"))
		e.bodies = append(e.bodies, string(body))
		e.mu.Unlock()
		if e.hang {
			select { // until the client gives up, or the test ends
			case <-r.Context().Done():
			case <-e.release:
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"charge":"ch_1","status":"succeeded"}`))
	}))
	t.Cleanup(e.Close)
	// Cleanups run last-registered first: handlers are released before Close
	// waits for them.
	t.Cleanup(func() { close(e.release) })
	return e
}

// received are the request bodies, in order.
func (e *effectServer) received() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.bodies...)
}

func (e *effectServer) requests() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.keys...)
}

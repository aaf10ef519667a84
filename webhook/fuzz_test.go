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

package webhook_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/randfill"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/webhook"
)

// Values a uniform random string would almost never hit, so that random
// objects reach the interesting branches: valid and invalid enums, Never,
// zero and negative durations, CEL that compiles and CEL that does not.
var (
	durations = []exagentv1.Duration{"", "Never", "never", "0s", "1h", "90s", "1h30m", "-1s", "1x", "999999h", "1.5h", "ms"}
	enums     = []string{"", "Approve", "Deny", "Cancel", "Resolve", "Succeeded", "Failed", "Retry", "OpenAI", "Scripted",
		"Allow", "Ask", "Stop", "Continue", "Get", "Scale", "Pending", "Uncertain", "AwaitingApproval", "Running", "junk"}
	whens = []string{"", "true", "args.amount > 100", "args.amount >", `"yes"`, "args.x.y.z == 1 && size(args) > 0",
		"request.user == 'x'", "args['k'] in ['a', 'b']", "1 +", "args.list.all(x, x > 0)", strings.Repeat("(", 200)}
	ids   = []string{"", "a1", "c1", "a9"}
	urls  = []string{"", "http://127.0.0.1:1/x", "https://api.example/v1", "ftp://x", "http://", "https://u:p@h/", "::", "http://[::1"}
	names = []string{"", "a", "payments", "Not_Valid", "a.b-c", "ns/sa", "system:serviceaccount:ns:sa", strings.Repeat("x", 300), "*"}
)

// filler builds random exagent objects from fill, biased towards the
// values above.
func filler(f *randfill.Filler) *randfill.Filler {
	pickString := func(c randfill.Continue, list []string) string {
		if c.Intn(4) == 0 {
			return c.String(0)
		}
		return list[c.Intn(len(list))]
	}
	return f.NilChance(0.3).NumElements(0, 3).MaxDepth(12).Funcs(
		func(d *exagentv1.Duration, c randfill.Continue) { *d = durations[c.Intn(len(durations))] },
		func(k *exagentv1.DecisionKind, c randfill.Continue) {
			*k = exagentv1.DecisionKind(pickString(c, enums))
		},
		func(k *exagentv1.ResolveOutcome, c randfill.Continue) {
			*k = exagentv1.ResolveOutcome(pickString(c, enums))
		},
		func(k *exagentv1.ModelProvider, c randfill.Continue) {
			*k = exagentv1.ModelProvider(pickString(c, enums))
		},
		func(k *exagentv1.PolicyAction, c randfill.Continue) {
			*k = exagentv1.PolicyAction(pickString(c, enums))
		},
		func(k *exagentv1.OnDeny, c randfill.Continue) { *k = exagentv1.OnDeny(pickString(c, enums)) },
		func(k *exagentv1.BuiltinOperation, c randfill.Continue) {
			*k = exagentv1.BuiltinOperation(pickString(c, enums))
		},
		func(k *exagentv1.RunPhase, c randfill.Continue) { *k = exagentv1.RunPhase(pickString(c, enums)) },
		func(k *exagentv1.CallState, c randfill.Continue) { *k = exagentv1.CallState(pickString(c, enums)) },
		func(k *exagentv1.ApprovalState, c randfill.Continue) {
			*k = exagentv1.ApprovalState(pickString(c, enums))
		},
		func(r *exagentv1.PolicyRule, c randfill.Continue) {
			c.FillNoCustom(r)
			r.When = pickString(c, whens)
		},
		func(r *exagentv1.LocalObjectReference, c randfill.Continue) { r.Name = pickString(c, names) },
		func(r *exagentv1.Approvers, c randfill.Continue) {
			for range c.Intn(3) {
				r.Users = append(r.Users, pickString(c, names))
				r.Groups = append(r.Groups, pickString(c, names))
				r.ServiceAccounts = append(r.ServiceAccounts, pickString(c, names))
			}
		},
		func(r *runtime.RawExtension, c randfill.Continue) { r.Raw = randomJSON(c) },
		// IDs from a small set, so that decisions find (or just miss) the
		// run's approvals and calls.
		func(s *exagentv1.ApprovalDecisionSpec, c randfill.Continue) {
			c.FillNoCustom(s)
			s.ApprovalID, s.CallID = ids[c.Intn(len(ids))], ids[c.Intn(len(ids))]
			c.Fill(&s.Decision)
			c.Fill(&s.Outcome)
			c.Fill(&s.RunRef)
		},
		func(a *exagentv1.Approval, c randfill.Continue) {
			c.FillNoCustom(a)
			a.ID, a.CallID = ids[c.Intn(len(ids))], ids[c.Intn(len(ids))]
			c.Fill(&a.State)
		},
		func(tc *exagentv1.ToolCall, c randfill.Continue) {
			c.FillNoCustom(tc)
			tc.ID = ids[c.Intn(len(ids))]
			c.Fill(&tc.State)
		},
		func(h *exagentv1.HTTPTool, c randfill.Continue) {
			c.FillNoCustom(h)
			h.URL = pickString(c, urls)
			c.Fill(&h.Timeout)
		},
		func(m *exagentv1.ModelSpec, c randfill.Continue) {
			c.FillNoCustom(m)
			m.BaseURL = pickString(c, urls)
			c.Fill(&m.Provider)
			c.Fill(&m.Script)
		},
	)
}

// randomJSON is sometimes not JSON at all, sometimes a schema-shaped
// object with wrong keyword types, nested a few levels.
func randomJSON(c randfill.Continue) []byte {
	switch c.Intn(6) {
	case 0:
		return []byte(c.String(0))
	case 1:
		return nil
	}
	b, err := json.Marshal(randomValue(c, 0))
	if err != nil {
		panic(err)
	}
	return b
}

func randomValue(c randfill.Continue, depth int) any {
	keys := []string{"type", "properties", "items", "required", "enum", "anyOf", "additionalProperties",
		"minLength", "maximum", "description", "$defs", "not", "x-custom"}
	types := []any{"object", "string", "number", "money", 7, []any{"string", "null"}, []any{}}
	if depth > 4 {
		return types[c.Intn(len(types))]
	}
	switch c.Intn(5) {
	case 0:
		return types[c.Intn(len(types))]
	case 1:
		l := make([]any, c.Intn(3))
		for i := range l {
			l[i] = randomValue(c, depth+1)
		}
		return l
	case 2:
		return c.Float64()*20 - 10
	}
	m := map[string]any{}
	if depth == 0 && c.Intn(2) == 0 {
		m["type"] = "object"
	}
	for range c.Intn(4) {
		m[keys[c.Intn(len(keys))]] = randomValue(c, depth+1)
	}
	return m
}

// checkErrors is the property: every rejection names a field path and a
// reason, and renders as a message.
func checkErrors(t *testing.T, what string, obj any, errs field.ErrorList) {
	t.Helper()
	for _, e := range errs {
		if e == nil || e.Field == "" || e.Type == "" || e.Error() == "" {
			data, _ := json.Marshal(obj)
			t.Fatalf("%s: a rejection without a field path: %#v\nobject: %s", what, e, data)
		}
	}
}

// validateAll runs every exported validation on objects filled by f, as
// creates and as updates (against a random old object and against itself).
func validateAll(t *testing.T, f *randfill.Filler) {
	t.Helper()
	var (
		d, dOld     exagentv1.ApprovalDecision
		r, rOld     exagentv1.AgentRun
		agent, aOld exagentv1.Agent
	)
	f.Fill(&d)
	f.Fill(&dOld)
	f.Fill(&r)
	f.Fill(&rOld)
	f.Fill(&agent)
	f.Fill(&aOld)

	checkErrors(t, "ValidateApprovalDecision create", &d, webhook.ValidateApprovalDecision(&d, nil))
	checkErrors(t, "ValidateDecisionTarget", &d, webhook.ValidateDecisionTarget(&d, &r))
	checkErrors(t, "ValidateAgentRun create", &r, webhook.ValidateAgentRun(&r, nil))
	checkErrors(t, "ValidateAgentRun update", &r, webhook.ValidateAgentRun(&r, &rOld))
	if errs := webhook.ValidateAgentRun(&r, r.DeepCopy()); len(errs) > 0 {
		t.Fatalf("an update that changes nothing was refused: %v", errs)
	}
	checkErrors(t, "ValidateAgent", &agent, webhook.ValidateAgent(&agent, nil))
	checkErrors(t, "ValidateAgent update", &agent, webhook.ValidateAgent(&agent, &aOld))
}

// TestValidateRandomObjects runs the property over a fixed set of seeds, so
// plain `go test` covers it deterministically.
func TestValidateRandomObjects(t *testing.T) {
	for seed := int64(1); seed <= 1500; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			validateAll(t, filler(randfill.NewWithSeed(seed)))
		})
	}
}

// FuzzValidate lets `go test -fuzz=FuzzValidate ./webhook` search beyond
// the fixed seeds; the fuzzer's bytes drive the filler.
func FuzzValidate(f *testing.F) {
	for _, seed := range []string{"", "exagent", "\x00\x01\x02\x03\x04\x05\x06\x07", strings.Repeat("\xff", 64)} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		validateAll(t, filler(randfill.NewFromGoFuzz(data)))
	})
}

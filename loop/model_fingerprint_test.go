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

package loop

import (
	"testing"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// TestModelFingerprintEndpoint: header names and the CA bundle's reference
// enter the model fingerprint; the Secrets the values come from, and the
// names' case and order, do not.
func TestModelFingerprintEndpoint(t *testing.T) {
	fp := func(mut func(m *exagentv1.ModelSpec)) string {
		t.Helper()
		m := exagentv1.ModelSpec{Provider: exagentv1.ModelProviderOpenAI, Name: "m", BaseURL: "https://gw/v1"}
		mut(&m)
		env, err := NewEnv(EnvInput{RunUID: "u", Agent: &exagentv1.AgentSpec{Model: m}, Run: &exagentv1.AgentRunSpec{}})
		if err != nil {
			t.Fatal(err)
		}
		return env.Binding().Model
	}
	h := func(name, secret string) exagentv1.SecretHeader {
		return exagentv1.SecretHeader{Name: name, ValueFrom: exagentv1.SecretKeySelector{Name: secret, Key: "v"}}
	}
	none := fp(func(*exagentv1.ModelSpec) {})
	tenant := fp(func(m *exagentv1.ModelSpec) {
		m.Headers = []exagentv1.SecretHeader{h("X-Tenant", "a"), h("api-key", "k")}
	})
	cases := map[string]struct {
		mut  func(m *exagentv1.ModelSpec)
		want string
	}{
		"an empty list is no list": {func(m *exagentv1.ModelSpec) { m.Headers = []exagentv1.SecretHeader{} }, none},
		"another Secret, case and order": {func(m *exagentv1.ModelSpec) {
			m.Headers = []exagentv1.SecretHeader{h("Api-Key", "k2"), h("x-tenant", "b")}
		}, tenant},
	}
	for name, tc := range cases {
		if got := fp(tc.mut); got != tc.want {
			t.Errorf("%s: fingerprint %s, want %s", name, got, tc.want)
		}
	}
	differ := map[string]func(m *exagentv1.ModelSpec){
		"a header renamed": func(m *exagentv1.ModelSpec) {
			m.Headers = []exagentv1.SecretHeader{h("X-Team", "a"), h("api-key", "k")}
		},
		"a CA bundle": func(m *exagentv1.ModelSpec) {
			m.CABundleSecretRef = &exagentv1.SecretKeySelector{Name: "ca", Key: "ca.crt"}
		},
		"a region": func(m *exagentv1.ModelSpec) { m.Region = "us-east-1" },
	}
	for name, mut := range differ {
		if got := fp(mut); got == none || got == tenant {
			t.Errorf("%s: fingerprint %s unchanged", name, got)
		}
	}
	if tenant == none {
		t.Error("headers do not change the fingerprint")
	}
}

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

package authz_test

import (
	"strings"
	"testing"
	"time"
)

// TestCallbackToken: a token verifies for its run, id and expiry only,
// under its key only; the expiry it carries is bound by the HMAC.
func TestCallbackToken(t *testing.T) {
	s, other := signers(t)
	exp := time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)
	tok := s.CallbackToken("uid-1", "cb-1", exp)
	if got, ok := s.VerifyCallbackToken("uid-1", "cb-1", tok); !ok || !got.Equal(exp) {
		t.Fatalf("own token: %s %v", got, ok)
	}
	_, sig, _ := strings.Cut(tok, ".")
	forged := map[string]struct{ uid, id, tok string }{
		"another run":        {"uid-2", "cb-1", tok},
		"another callback":   {"uid-1", "cb-2", tok},
		"a later expiry":     {"uid-1", "cb-1", "1900000000." + sig},
		"another key":        {"uid-1", "cb-1", other.CallbackToken("uid-1", "cb-1", exp)},
		"empty":              {"uid-1", "cb-1", ""},
		"no signature":       {"uid-1", "cb-1", "1772618400."},
		"padded expiry":      {"uid-1", "cb-1", "0" + tok},
		"too long":           {"uid-1", "cb-1", tok + strings.Repeat("A", 200)},
		"signature not b64":  {"uid-1", "cb-1", "1772618400.***"},
		"expiry not decimal": {"uid-1", "cb-1", "x." + sig},
	}
	for name, f := range forged {
		if _, ok := s.VerifyCallbackToken(f.uid, f.id, f.tok); ok {
			t.Errorf("%s: verified", name)
		}
	}
}

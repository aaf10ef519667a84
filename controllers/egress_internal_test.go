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

package controllers

import (
	"errors"
	"fmt"
	"net/netip"
	"testing"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/bounded"
	"github.com/exagent-io/exagent/internal/egress"
	"github.com/exagent-io/exagent/model"
)

func TestFinalModelError(t *testing.T) {
	denied := egress.Default().Check(netip.MustParseAddrPort("169.254.169.254:80"))
	tests := map[string]struct {
		err        error
		wantReason string
	}{
		"egress refusal":    {err: fmt.Errorf("openai: %w", denied), wantReason: exagentv1.ReasonEgressDenied},
		"answer too large":  {err: fmt.Errorf("reading: %w", &bounded.TooLargeError{What: "x", Limit: 8}), wantReason: exagentv1.ReasonModelAnswerTooLarge},
		"redirect":          {err: fmt.Errorf("openai: %w", &model.RedirectError{Status: 302}), wantReason: exagentv1.ReasonModelRedirected},
		"a transient error": {err: errors.New("HTTP 503")},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			reason, final := finalModelError(tc.err)
			if reason != tc.wantReason || final != (tc.wantReason != "") {
				t.Errorf("finalModelError = %q, %v; want %q", reason, final, tc.wantReason)
			}
		})
	}
}

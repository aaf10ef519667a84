package controllers

import (
	"errors"
	"fmt"
	"net/netip"
	"testing"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
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

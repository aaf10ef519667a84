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

package trigger

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// Tolerance is how far a Standard Webhooks timestamp may be from now
// (the specification's 5 minutes): an older delivery is a replay.
const Tolerance = 5 * time.Minute

// ErrUnauthenticated: the request does not prove it comes from who holds
// the trigger's secret (401, nothing created).
var ErrUnauthenticated = errors.New("unauthenticated")

// VerifySignature checks a Standard Webhooks delivery: the signature over
// webhook-id, webhook-timestamp and the body with secret (whsec_…
// base64, as the specification writes it), and the timestamp within
// Tolerance of now. It returns the delivery id, which the caller refuses
// a second time (Replays).
func VerifySignature(secret string, body []byte, h http.Header, now time.Time) (string, error) {
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return "", fmt.Errorf("the trigger's signing secret is not a Standard Webhooks secret (whsec_ and base64): %w", err)
	}
	id := h.Get("webhook-id")
	if id == "" || len(id) > 256 {
		return "", fmt.Errorf("%w: webhook-id is missing or longer than 256 bytes", ErrUnauthenticated)
	}
	ts, err := strconv.ParseInt(h.Get("webhook-timestamp"), 10, 64)
	if err != nil {
		return "", fmt.Errorf("%w: webhook-timestamp is not a Unix time", ErrUnauthenticated)
	}
	if at := time.Unix(ts, 0); at.Before(now.Add(-Tolerance)) || at.After(now.Add(Tolerance)) {
		return "", fmt.Errorf("%w: webhook-timestamp %s is more than %s from now", ErrUnauthenticated, at.UTC().Format(time.RFC3339), Tolerance)
	}
	// The library's own timestamp check reads the wall clock: ours, above,
	// reads the injected one.
	if err := wh.VerifyIgnoringTimestamp(body, h); err != nil {
		return "", fmt.Errorf("%w: %v", ErrUnauthenticated, err)
	}
	return id, nil
}

// VerifyBearer checks an Authorization: Bearer token against token, in
// constant time.
func VerifyBearer(token string, h http.Header) error {
	got, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer ")
	if !ok || token == "" || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
		return fmt.Errorf("%w: the bearer token is missing or wrong", ErrUnauthenticated)
	}
	return nil
}

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

package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/exagent-io/exagent/internal/egress"
)

// Sign returns the Standard Webhooks headers of body: webhook-id,
// webhook-timestamp (Unix seconds) and webhook-signature ("v1," and the
// base64 HMAC-SHA256 of "id.timestamp.body"). A key "whsec_<base64>" is
// decoded first, as Standard Webhooks secrets are written.
func Sign(key, id string, at time.Time, body []byte) (http.Header, error) {
	s, err := NewSigner(key, id, at)
	if err != nil {
		return nil, err
	}
	_, _ = s.Write(body)
	return s.Header(), nil
}

// Signer computes the Standard Webhooks signature of a body written to
// it, so a body too large to hold in memory (a run's archive) is signed
// as it is generated, then generated again to be sent.
type Signer struct {
	id, ts string
	mac    hash.Hash
}

// NewSigner starts the signature of the body of request id sent at at.
func NewSigner(key, id string, at time.Time) (*Signer, error) {
	secret := []byte(key)
	if rest, ok := strings.CutPrefix(key, "whsec_"); ok {
		b, err := base64.StdEncoding.DecodeString(rest)
		if err != nil {
			return nil, fmt.Errorf("signing key whsec_…: not base64: %w", err)
		}
		secret = b
	}
	s := &Signer{id: id, ts: strconv.FormatInt(at.Unix(), 10), mac: hmac.New(sha256.New, secret)}
	s.mac.Write([]byte(id + "." + s.ts + "."))
	return s, nil
}

// Write adds body bytes to the signature.
func (s *Signer) Write(p []byte) (int, error) { return s.mac.Write(p) }

// Header returns the headers that sign what was written.
func (s *Signer) Header() http.Header {
	h := http.Header{}
	h.Set("webhook-id", s.id)
	h.Set("webhook-timestamp", s.ts)
	h.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(s.mac.Sum(nil)))
	return h
}

// Request is one delivery attempt.
type Request struct {
	URL         string
	ID          string
	Body        []byte
	ContentType string
	// Key signs the request when not empty.
	Key string
	At  time.Time
	// Namespace of the run, for the egress policy's namespace allow-list.
	Namespace string
}

// Send POSTs r and returns nil for a 2xx answer. Every request carries the
// notification id (webhook-id) even unsigned, so receivers can dedupe. A
// redirect is never followed, whatever c says: it is an error naming the
// Location (the sink's url should be the final address). At most an
// excerpt of the answer is read.
func Send(ctx context.Context, c *http.Client, r Request) error {
	c = egress.WithoutRedirects(c)
	ctx = egress.WithNamespace(ctx, r.Namespace)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		return fmt.Errorf("building the request: %w", err)
	}
	req.Header.Set("Content-Type", r.ContentType)
	req.Header.Set("User-Agent", "exagent-notify")
	if r.Key != "" {
		h, err := Sign(r.Key, r.ID, r.At, r.Body)
		if err != nil {
			return err
		}
		for k, v := range h {
			req.Header[k] = v
		}
	} else {
		req.Header.Set("webhook-id", r.ID)
		req.Header.Set("webhook-timestamp", strconv.FormatInt(r.At.Unix(), 10))
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %w", r.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 3 {
		return fmt.Errorf("POST %s: HTTP %d, a redirect to %q: not followed (exagent never follows redirects); set the sink's url to the final address",
			r.URL, resp.StatusCode, Excerpt(resp.Header.Get("Location"), 256))
	}
	excerpt, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("POST %s: HTTP %d: %s", r.URL, resp.StatusCode, strings.TrimSpace(string(excerpt)))
	}
	return nil
}

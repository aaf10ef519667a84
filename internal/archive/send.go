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

package archive

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/exagent-io/exagent/internal/egress"
	"github.com/exagent-io/exagent/internal/notify"
)

// Request is one delivery attempt of a run's archive.
type Request struct {
	URL string
	// ID is the CloudEvent id, sent as webhook-id too (receivers dedupe on it).
	ID string
	// Key signs the request (Standard Webhooks) when not empty.
	Key string
	// At is the attempt's time (webhook-timestamp).
	At time.Time
	// Namespace of the run, for the egress policy's namespace allow-list.
	Namespace string
	// Write writes the body; it is called twice and must write the same
	// bytes each time (Write of this package is deterministic).
	Write func(io.Writer) error
}

// answerExcerpt bounds what is read of the sink's answer.
const answerExcerpt = 256

// Send POSTs the archive and returns nil for a 2xx answer. The body is
// generated twice, never held: once to measure it and sign it, once onto
// the wire. A redirect is never followed, whatever c says; at most an
// excerpt of the answer is read.
func Send(ctx context.Context, c *http.Client, r Request) error {
	var sig *notify.Signer
	if r.Key != "" {
		s, err := notify.NewSigner(r.Key, r.ID, r.At)
		if err != nil {
			return err
		}
		sig = s
	}
	size := &counter{}
	var w io.Writer = size
	if sig != nil {
		w = io.MultiWriter(size, sig)
	}
	if err := r.Write(w); err != nil {
		return fmt.Errorf("writing the archive: %w", err)
	}

	pr, pw := io.Pipe()
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		// The writer's error reaches the request through the pipe (nil:
		// EOF to the reader), and fails it.
		pw.CloseWithError(r.Write(pw))
	}()
	defer func() {
		_ = pr.Close() // a sink that answered early stops the writer
		<-wrote
	}()

	ctx = egress.WithNamespace(ctx, r.Namespace)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, pr)
	if err != nil {
		return fmt.Errorf("building the request: %w", err)
	}
	req.ContentLength = size.n
	req.Header.Set("Content-Type", ContentType)
	req.Header.Set("User-Agent", "exagent-archive")
	if sig != nil {
		for k, v := range sig.Header() {
			req.Header[k] = v
		}
	} else {
		req.Header.Set("webhook-id", r.ID)
		req.Header.Set("webhook-timestamp", strconv.FormatInt(r.At.Unix(), 10))
	}
	resp, err := egress.WithoutRedirects(c).Do(req)
	if err != nil {
		return fmt.Errorf("POST %s: %w", r.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 3 {
		return fmt.Errorf("POST %s: HTTP %d, a redirect to %q: not followed (exagent never follows redirects); set retention.archive.url to the final address",
			r.URL, resp.StatusCode, notify.Excerpt(resp.Header.Get("Location"), answerExcerpt))
	}
	excerpt, _ := io.ReadAll(io.LimitReader(resp.Body, answerExcerpt))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("POST %s: HTTP %d: %s", r.URL, resp.StatusCode, strings.TrimSpace(string(excerpt)))
	}
	return nil
}

// counter counts the bytes written to it.
type counter struct{ n int64 }

func (c *counter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

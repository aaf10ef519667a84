//go:build upgrade

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

package upgrade

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// delivery is one notification the sink received: its Standard Webhooks
// id, and whether its webhook-signature verified with the sink's key.
type delivery struct {
	ID, Type string
	Verified bool
	Body     string
}

// sink is a notification receiver on a fixed 127.0.0.1 address, which is
// down (nothing listens) until up: the runs' notifications are pending,
// retried with backoff, across the upgrade. It verifies each request's
// Standard Webhooks signature (webhook-signature: "v1,"+base64 of
// HMAC-SHA256 over "id.timestamp.body") with key.
type sink struct {
	addr string
	key  []byte

	mu   sync.Mutex
	got  []delivery
	srv  *http.Server
	done chan struct{}
}

// up starts listening.
func (s *sink) up() error {
	l, err := net.Listen("tcp", s.addr)
	if err != nil {
		return err
	}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second}
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(l)
	}()
	return nil
}

func (s *sink) close() {
	if s.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
	<-s.done
}

func (s *sink) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	id, ts := r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp")
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(id + "." + ts + "." + string(body)))
	want := "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
	verified := false
	for _, sig := range strings.Fields(r.Header.Get("webhook-signature")) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			verified = true
		}
	}
	s.mu.Lock()
	s.got = append(s.got, delivery{ID: id, Type: r.Header.Get("ce-type"), Verified: verified, Body: string(body)})
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// received returns every delivery so far.
func (s *sink) received() []delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]delivery(nil), s.got...)
}

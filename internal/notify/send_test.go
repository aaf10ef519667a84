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
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/exagent-io/exagent/internal/egress"
)

// TestSendFollowsNoRedirect: a sink's redirect is an error naming it, even
// with a client whose policy would follow it; the Location sees nothing.
func TestSendFollowsNoRedirect(t *testing.T) {
	var target atomic.Int32
	to := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { target.Add(1) }))
	t.Cleanup(to.Close)
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, to.URL+"/hook", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(sink.Close)
	err := Send(t.Context(), &http.Client{}, Request{URL: sink.URL, ID: "n1", Body: []byte("{}"), ContentType: "application/json", Key: "k", At: time.Unix(1, 0)})
	if err == nil || !strings.Contains(err.Error(), "HTTP 307, a redirect to") || !strings.Contains(err.Error(), "not followed") {
		t.Errorf("err = %v, want the redirect named", err)
	}
	if target.Load() != 0 {
		t.Errorf("the Location received %d requests, want none", target.Load())
	}
}

// TestSendEgressDenied: a sink at a denied address is refused at dial time.
func TestSendEgressDenied(t *testing.T) {
	var hits atomic.Int32
	sink := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	t.Cleanup(sink.Close)
	err := Send(t.Context(), egress.NewClient(egress.TransportOptions{}), Request{URL: sink.URL, ID: "n1", Body: []byte("{}"), ContentType: "application/json", At: time.Unix(1, 0)})
	if err == nil || !strings.Contains(err.Error(), "egress denied: 127.0.0.1:") || hits.Load() != 0 {
		t.Errorf("err = %v, %d requests received; want the refusal and none", err, hits.Load())
	}
}

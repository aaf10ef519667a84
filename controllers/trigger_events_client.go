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
	"fmt"
	"io"
	"net/http"

	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
)

// maxEventListBytes bounds one page of a listing of Events. A page holds
// eventListPage Events, but whoever may create Events writes their size
// (a core/v1 Event's message is unbounded up to the apiserver's object
// limit, ~1.5 MiB): a page past this fails, and the watch backs off.
// Watches are not bounded so — a watch is one long answer — each of
// their Events is bounded by the apiserver's object limit.
const maxEventListBytes = 16 << 20

// eventsClient is a core/v1 client of base's apiserver impersonating
// the ServiceAccount namespace/sa.
func eventsClient(base *rest.Config, namespace, sa string) (corev1client.CoreV1Interface, error) {
	cfg := rest.CopyConfig(base)
	// Only the user: for a ServiceAccount's username the apiserver adds
	// the groups its token carries, and the manager needs no right to
	// impersonate groups (which would let it claim any).
	cfg.Impersonate = rest.ImpersonationConfig{UserName: serviceAccountUser(namespace, sa)}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return limitLists{next: rt} })
	c, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("impersonating ServiceAccount %s/%s: %w", namespace, sa, err)
	}
	return c, nil
}

// limitLists bounds the body of every answer that is not a watch.
type limitLists struct{ next http.RoundTripper }

func (l limitLists) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.next.RoundTrip(req)
	if err != nil || resp.Body == nil || req.URL.Query().Get("watch") == "true" {
		return resp, err
	}
	resp.Body = &boundedBody{rc: resp.Body, left: maxEventListBytes}
	return resp, nil
}

// boundedBody fails a read past its bound, rather than cut an answer.
type boundedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var one [1]byte
		if n, err := b.rc.Read(one[:]); n == 0 {
			return 0, err // at the bound, and nothing more: the whole answer
		}
		return 0, fmt.Errorf("a listing of Events larger than %d bytes", maxEventListBytes)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }

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

package chaos

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/exagent-io/exagent/internal/testing/procs"
)

// triggerHTTP posts events to managers' trigger listeners over TLS (the
// webhook serving pair devcluster made, its CA trusted).
type triggerHTTP struct{ c *http.Client }

func triggerClient(caFile string) (*triggerHTTP, error) {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("the trigger listener's CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("no certificate in %s", caFile)
	}
	return &triggerHTTP{c: &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, MaxIdleConnsPerHost: 16}}}, nil
}

// triggerAnswer is a listener's JSON answer (triggers.Result).
type triggerAnswer struct {
	Runs       []string `json:"runs"`
	Duplicates int      `json:"duplicates"`
}

// post sends body to the trigger ns/name on port with the bearer token:
// the status, the answer, or a transport error.
func (h *triggerHTTP) post(port int, ns, name, token string, body []byte) (int, triggerAnswer, error) {
	var ans triggerAnswer
	req, err := http.NewRequest(http.MethodPost, "https://127.0.0.1:"+strconv.Itoa(port)+"/triggers/"+ns+"/"+name, bytes.NewReader(body))
	if err != nil {
		return 0, ans, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := h.c.Do(req)
	if err != nil {
		return 0, ans, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, ans, err // the manager died while answering
	}
	if resp.StatusCode/100 == 2 {
		_ = json.Unmarshal(b, &ans)
	}
	return resp.StatusCode, ans, nil
}

// burst sends sz.triggerEvents events over sz.triggerKeys keys from
// sz.triggerSenders concurrent senders, at sz.triggerRate events a second
// in all (alerts fire over a while, so kills land inside the burst). Keys
// start firing one after another over the first 80% of the events — each
// key's first event is its first delivery, then it repeats at random with
// the keys already firing. Each event goes to a random live manager; after
// a connection error or a 5xx it goes again to another, after 50 ms
// doubling to 1 s, for at most two minutes. A 2xx answer's runs are
// recorded under its key.
func (r *r8Run) burst(sz size, rng *rand.Rand) {
	events := make(chan int)
	keys := make([]string, sz.triggerEvents)
	firing := 0
	for n := range keys {
		if due := 1 + n*sz.triggerKeys*5/(4*sz.triggerEvents); firing < min(due, sz.triggerKeys) {
			keys[n] = r8Key(firing)
			firing++
			continue
		}
		keys[n] = r8Key(rng.IntN(firing))
	}
	var wg sync.WaitGroup
	for i := range sz.triggerSenders {
		own := rand.New(rand.NewPCG(uint64(seed()), uint64(100+i)))
		wg.Go(func() {
			for n := range events {
				r.deliver(keys[n], n, own)
			}
		})
	}
	tick := time.NewTicker(time.Second / time.Duration(sz.triggerRate))
	defer tick.Stop()
	for n := range keys {
		<-tick.C // the burst's pace: events fire over a while
		events <- n
	}
	close(events)
	wg.Wait()
}

func (r *r8Run) deliver(key string, seq int, rng *rand.Rand) {
	body, _ := json.Marshal(map[string]any{"key": key, "seq": seq})
	deadline := time.Now().Add(2 * time.Minute)
	last := -1
	for attempt := 0; time.Now().Before(deadline); attempt++ {
		if attempt > 0 {
			r.mu.Lock()
			r.retries++
			r.mu.Unlock()
			// Retry once a manager's listener accepts connections (a
			// killed one is restarted), not after a fixed time.
			_ = procs.Poll(max(time.Until(deadline), 0), func() (bool, error) { return r.anyListening(), nil })
		}
		i := r.otherLive(last, rng)
		if i < 0 {
			continue // no manager is up: wait and try again
		}
		last = i
		code, ans, err := r.client.post(r.ports[i], r.ns, r8Trigger, r8Token, body)
		if err != nil || code >= 500 {
			continue
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.deliveries++
		switch code {
		case http.StatusCreated:
			r.created++
		case http.StatusOK:
			r.ok++
		default:
			r.failed++
			r.t.Logf("chaos r8: event %d (key %s) answered %d by manager %d", seq, key, code, i)
			return
		}
		r.answered[key] = append(r.answered[key], ans.Runs...)
		return
	}
	r.mu.Lock()
	r.failed++
	r.mu.Unlock()
}

// otherLive is a live manager's slot other than not when another is
// live, at random (-1: none is).
// anyListening reports whether a live manager's trigger listener accepts
// a TCP connection now.
func (r *r8Run) anyListening() bool {
	r.pool.mu.Lock()
	var ports []int
	for i, p := range r.pool.procs {
		if p != nil {
			ports = append(ports, r.ports[i])
		}
	}
	r.pool.mu.Unlock()
	for _, port := range ports {
		if procs.Dial(net.JoinHostPort("127.0.0.1", strconv.Itoa(port))) {
			return true
		}
	}
	return false
}

func (r *r8Run) otherLive(not int, rng *rand.Rand) int {
	r.pool.mu.Lock()
	defer r.pool.mu.Unlock()
	var live, others []int
	for i, p := range r.pool.procs {
		if p != nil {
			live = append(live, i)
			if i != not {
				others = append(others, i)
			}
		}
	}
	if len(others) > 0 {
		return others[rng.IntN(len(others))]
	}
	if len(live) > 0 {
		return live[0]
	}
	return -1
}

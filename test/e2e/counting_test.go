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

package e2e

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// apiRequest is one HTTP request a client made of the apiserver.
type apiRequest struct {
	Method, Path string
	Query        url.Values
}

func (r apiRequest) String() string {
	if len(r.Query) == 0 {
		return r.Method + " " + r.Path
	}
	return r.Method + " " + r.Path + "?" + r.Query.Encode()
}

// discovery reports a request of the REST mapper (what kubectl caches
// under ~/.kube/cache), not a read of objects.
func (r apiRequest) discovery() bool {
	p := strings.TrimSuffix(r.Path, "/")
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	switch {
	case p == "/api" || p == "/apis" || p == "/version" || strings.HasPrefix(p, "/openapi"):
		return true
	case parts[0] == "api" && len(parts) == 2: // /api/v1
		return true
	case parts[0] == "apis" && len(parts) <= 3: // /apis/group[/version]
		return true
	}
	return false
}

// countingProxy stands between the plugin (run as its users run it, through
// the real kubectl) and the apiserver, and records every request it
// forwards: the honest count of what a command asks the apiserver for.
// It authenticates upstream as user, with that user's client certificate,
// so the apiserver, RBAC and admission see that user.
type countingProxy struct {
	srv *httptest.Server
	mu  sync.Mutex
	log []apiRequest
}

// newCountingProxy starts a proxy for user and writes DIR/<user>-counted.kubeconfig
// pointing at it: kubectl(t, user+"-counted", …) goes through it.
func newCountingProxy(t *testing.T, user string) *countingProxy {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", s.kubeconfig(t, user))
	if err != nil {
		t.Fatal(err)
	}
	upstream, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := &countingProxy{}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(upstream)
			// The proxy's own credentials replace whatever the client sent.
			r.Out.Header.Del("Authorization")
		},
		Transport:     transport,
		FlushInterval: -1, // watches stream
	}
	p.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.log = append(p.log, apiRequest{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query()})
		p.mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)

	kc := clientcmdapi.NewConfig()
	kc.Clusters["counted"] = &clientcmdapi.Cluster{Server: p.srv.URL,
		CertificateAuthorityData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.srv.Certificate().Raw})}
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{}
	kc.Contexts["counted"] = &clientcmdapi.Context{Cluster: "counted", AuthInfo: user}
	kc.CurrentContext = "counted"
	path := filepath.Join(s.dir, user+"-counted.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(path) })
	return p
}

// take returns the requests recorded since the last take, discovery left out.
func (p *countingProxy) take(t *testing.T) []apiRequest {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []apiRequest
	for _, r := range p.log {
		if r.discovery() {
			t.Logf("discovery: %s", r)
			continue
		}
		out = append(out, r)
	}
	p.log = nil
	return out
}

// requests renders rs one per line, for failure messages.
func requests(rs []apiRequest) string {
	var b strings.Builder
	for _, r := range rs {
		b.WriteString("  " + r.String() + "\n")
	}
	return b.String()
}

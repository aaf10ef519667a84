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

package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/exagent-io/exagent/callbacks"
	"github.com/exagent-io/exagent/triggers"
)

// triggerListener serves the trigger listener (POST /triggers/NS/NAME,
// docs/triggers.md; and POST /callbacks/NS/RUN-UID/ID, docs/waits.md) on addr over TLS with the certificate in certDir
// (tls.crt, tls.key; reloaded when it rotates), on every replica: the
// runs it makes are named from the trigger, key and window, so two
// replicas receiving one delivery make one run.
type triggerListener struct {
	addr, certDir string
	tlsOpts       []func(*tls.Config)
	handler       http.Handler
	// callbacks serves NewCallback's URLs; nil when none are made.
	callbacks http.Handler
}

// addTriggerListener adds the listener of h (and of cb, the callbacks,
// when not nil) to mgr when addr is set.
func addTriggerListener(mgr manager.Manager, h *triggers.Handler, cb http.Handler, addr, certDir string, tlsOpts []func(*tls.Config)) error {
	if addr == "" {
		return nil
	}
	if certDir == "" {
		return errors.New("--trigger-bind-address needs a certificate: set --trigger-cert-dir (or --webhook-cert-dir)")
	}
	return mgr.Add(&triggerListener{addr: addr, certDir: certDir, tlsOpts: tlsOpts, handler: h, callbacks: cb})
}

// NeedLeaderElection is false: every replica serves deliveries.
func (l *triggerListener) NeedLeaderElection() bool { return false }

// Start serves until ctx ends.
func (l *triggerListener) Start(ctx context.Context) error {
	w, err := certwatcher.New(filepath.Join(l.certDir, "tls.crt"), filepath.Join(l.certDir, "tls.key"))
	if err != nil {
		return fmt.Errorf("the trigger listener's certificate: %w", err)
	}
	go func() { _ = w.Start(ctx) }()
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: w.GetCertificate}
	for _, o := range l.tlsOpts {
		o(cfg)
	}
	mux := http.NewServeMux()
	mux.Handle("/triggers/", l.handler)
	if l.callbacks != nil {
		mux.Handle(callbacks.Prefix, l.callbacks)
	}
	srv := &http.Server{Handler: mux, TLSConfig: cfg, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 60 * time.Second, MaxHeaderBytes: 16 << 10}
	ln, err := net.Listen("tcp", l.addr)
	if err != nil {
		return fmt.Errorf("the trigger listener on %s: %w", l.addr, err)
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	ctrl.Log.WithName("triggers").Info("serving the trigger listener", "address", ln.Addr().String())
	if err := srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("the trigger listener: %w", err)
	}
	return nil
}

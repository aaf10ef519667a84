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

package app

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"runtime"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/exagent-io/exagent/cmd/kubectl-approve/app/ui"
)

// uiOptions is `kubectl approve ui`: the approver's page (package ui).
type uiOptions struct {
	genericiooptions.IOStreams
	Port          int
	Open          bool
	Address       string
	TLSCert       string
	TLSKey        string
	Serve         bool
	Auth          string
	AllNamespaces bool
	// SessionLifetime is how long a local session lasts.
	SessionLifetime time.Duration

	cfg ui.Config
}

func newUICommand(f *factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &uiOptions{IOStreams: streams, Port: ui.DefaultPort, SessionLifetime: ui.DefaultSessionLifetime}
	cmd := &cobra.Command{
		Use:   "ui [--port N] [--open] [-n NS | -A]",
		Short: "Serve the approver's page: a live inbox and run pages in the browser, acting as you",
		Long: `Serve a web page with the approvals waiting for a person (live, from a
watch) and a page per run (phase, calls, decisions, the transcript a page
at a time), where you approve, deny or resolve — each creating the same
ApprovalDecision the CLI verbs create, with your kubeconfig's credentials,
so admission records you as the actor. A conversation is one thread
(/conversations/NAMESPACE/NAME): its turns in order, the open turn
decidable there, and a reply box that adds a turn as you (what say
creates). The page has no authority of its own.

It listens on 127.0.0.1 only, behind a random token in the URL it prints
(exchanged once, on the first visit, for a session cookie that lasts
--session-lifetime). Another address
needs --address and TLS. --serve is server mode for a team, behind a
single-sign-on proxy: each request's own bearer token is what the page
uses against the apiserver (--auth bearer); see docs/ui.md.`,
		Example: `  kubectl approve ui --open
  kubectl approve ui -A --port 8001
  kubectl approve ui --serve --address 0.0.0.0:8443 --tls-cert tls.crt --tls-key tls.key --auth bearer`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runOptions(cmd.Context(), o, f, cmd, args)
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&o.Port, "port", o.Port, "Port to listen on at 127.0.0.1 (0: any free port).")
	fs.BoolVar(&o.Open, "open", false, "Open the page in the default browser.")
	fs.StringVar(&o.Address, "address", "", "host:port to listen on instead of 127.0.0.1:PORT; any non-loopback address needs --tls-cert and --tls-key.")
	fs.StringVar(&o.TLSCert, "tls-cert", "", "PEM certificate to serve HTTPS with.")
	fs.StringVar(&o.TLSKey, "tls-key", "", "PEM private key of --tls-cert.")
	fs.BoolVar(&o.Serve, "serve", false, "Server mode for a team behind a single-sign-on proxy: no token, each request authenticated by its bearer token (needs --auth bearer).")
	fs.StringVar(&o.Auth, "auth", "", "Whose credentials reach the apiserver: kubeconfig (default; yours) or bearer (each request's Authorization header; with --serve).")
	fs.DurationVar(&o.SessionLifetime, "session-lifetime", o.SessionLifetime, "How long the session the printed URL starts lasts; then restart for a new URL.")
	fs.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "Show waiting approvals across all namespaces you may list runs in.")
	return cmd
}

// Complete resolves the kubeconfig (as every verb does) and the address.
func (o *uiOptions) Complete(f *factory, cmd *cobra.Command, _ []string) error {
	ns, err := f.Namespace()
	if err != nil {
		return err
	}
	cfg, err := f.flags.ToRESTConfig()
	if err != nil {
		return fmt.Errorf("loading the kubeconfig: %w", err)
	}
	auth := ui.AuthMode(o.Auth)
	if auth == "" {
		auth = ui.AuthKubeconfig
		if o.Serve {
			auth = ui.AuthBearer
		}
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(o.Port))
	if o.Address != "" {
		addr = o.Address
	}
	o.cfg = ui.Config{Address: addr, AddressSet: cmd.Flags().Changed("address"), TLSCert: o.TLSCert, TLSKey: o.TLSKey,
		Serve: o.Serve, Auth: auth, Namespace: ns, AllNamespaces: o.AllNamespaces, REST: cfg,
		Decide: uiDecide, Explain: uiExplain, DecisionTimeout: defaultDecisionTimeout, SessionLifetime: o.SessionLifetime, Log: stderrLogger(o.ErrOut)}
	return nil
}

// Validate checks the flags (ui.Config.Validate says why it refuses).
func (o *uiOptions) Validate() error {
	if o.Port < 0 || o.Port > 65535 {
		return fmt.Errorf("--port %d: must be 0–65535", o.Port)
	}
	if o.SessionLifetime <= 0 {
		return fmt.Errorf("--session-lifetime %s: must be positive", o.SessionLifetime)
	}
	if o.Address != "" && o.Port != ui.DefaultPort {
		return fmt.Errorf("--port and --address cannot be used together: --address carries the port")
	}
	return o.cfg.Validate()
}

// Run serves until interrupted.
func (o *uiOptions) Run(ctx context.Context) error {
	s, err := ui.New(&o.cfg)
	if err != nil {
		return err
	}
	ln, err := s.Listen()
	if err != nil {
		return err
	}
	url := s.URL(ln.Addr())
	scope := "namespace " + o.cfg.Namespace
	if o.cfg.AllNamespaces {
		scope = "all namespaces"
	}
	fmt.Fprintf(o.Out, "Serving the approver's page for %s at\n  %s\n", scope, url)
	if !o.cfg.Serve {
		fmt.Fprintf(o.Out, "Run pages: %s/runs/{namespace}/{name} (the form of a manager --ui-url-template pointing here); conversations: %s/conversations/{namespace}/{name}. Ctrl-C stops it.\n",
			"http://"+ln.Addr().String(), "http://"+ln.Addr().String())
	}
	if o.Open {
		if err := openBrowser(url); err != nil {
			fmt.Fprintf(o.ErrOut, "could not open a browser (%v): open the URL above\n", err)
		}
	}
	return s.Serve(ctx, ln)
}

// openBrowser opens url with the desktop's opener (no shell: the URL is
// one argument).
func openBrowser(url string) error {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", url)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", url)
	default:
		cmd = exec.Command("xdg-open", url)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }()
	return nil
}

// stderrLogger logs the page's refusals as key=value lines on w.
func stderrLogger(w interface{ Write([]byte) (int, error) }) logr.Logger {
	return funcr.New(func(prefix, args string) { _, _ = fmt.Fprintln(w, prefix, args) }, funcr.Options{})
}

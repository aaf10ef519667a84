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

package ui

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// AuthMode says whose credentials a request to the apiserver carries.
type AuthMode string

const (
	// AuthKubeconfig uses the kubeconfig's credentials, as the CLI verbs
	// do: local mode, one person at 127.0.0.1.
	AuthKubeconfig AuthMode = "kubeconfig"
	// AuthBearer uses each HTTP request's own Authorization bearer token
	// (forwarded by a single-sign-on proxy): server mode, for a team.
	AuthBearer AuthMode = "bearer"
)

// DefaultSessionLifetime is how long a local session lasts unless
// --session-lifetime says otherwise: a working day.
const DefaultSessionLifetime = 12 * time.Hour

// DefaultPort is where the page listens unless --port says otherwise; the
// example --ui-url-template of the manager (docs/ui.md) points here.
const DefaultPort = 8000

// DecideRequest is one decision a person asked for on the page.
type DecideRequest struct {
	Namespace string
	Run       string
	Kind      exagentv1.DecisionKind
	// ApprovalID names the approval an Approve or Deny decides.
	ApprovalID string
	// CallID, Outcome and Evidence are a Resolve's.
	CallID   string
	Outcome  exagentv1.ResolveOutcome
	Evidence string
	// Action and Answer are an Answer's: Accept with the answer (JSON),
	// or Decline / Cancel with none.
	Action exagentv1.AnswerAction
	Answer []byte
	Reason string
	// Seen is what the page showed when the person pressed the button.
	Seen Seen
}

// Seen is what a decision form carries of the call the page rendered: the
// run's UID and the revision and payload hash of the approval (for a
// Resolve, the run's revision and the call's payload hash). A decision
// binds these, never what a read at POST time finds.
type Seen struct {
	RunUID      string
	Revision    int64
	PayloadHash string
}

// ErrCallChanged is the refusal of a form whose call is no longer the
// one the run holds: another approver edited it, the run moved on, or
// it was deleted and re-created under the same name. Nothing is created.
var ErrCallChanged = errors.New("the call changed since you looked: reload")

// Decider creates the ApprovalDecision req means with c — the same object
// `kubectl approve` creates — and waits until the operator applied or
// rejected it. The decision is bound to req.Seen (run UID, revision,
// payload hash); when the run read now differs from it the Decider
// creates nothing and returns an error wrapping ErrCallChanged. A refusal
// is an error whose message a person can read.
type Decider func(ctx context.Context, c client.Client, req DecideRequest) (*exagentv1.ApprovalDecision, error)

// Config is what `kubectl approve ui` resolved from its flags.
type Config struct {
	// Address is host:port to listen on; AddressSet tells whether the
	// user gave it with --address (only then may it be other than
	// loopback).
	Address    string
	AddressSet bool
	// TLSCert and TLSKey are PEM files; both or neither.
	TLSCert, TLSKey string
	// Serve is server mode (--serve): no per-start token, each request
	// authenticated by its bearer token.
	Serve bool
	Auth  AuthMode
	// Namespace is the inbox's namespace; AllNamespaces (-A) shows every
	// namespace the person may list runs in.
	Namespace     string
	AllNamespaces bool
	// REST is the kubeconfig's configuration, resolved as the CLI verbs
	// resolve it (--kubeconfig, --context, --as, …). In server mode only
	// its server address and CA are used, never its credentials.
	REST *rest.Config
	// Decide creates decisions (the plugin's own logic).
	Decide Decider
	// Explain turns an apiserver or plugin error into what a person reads
	// (the plugin's FormatError); nil: the error's text.
	Explain func(error) string
	// DecisionTimeout bounds how long a decision is waited for.
	DecisionTimeout time.Duration
	// SessionLifetime is how long a local session (its cookie) lasts;
	// DefaultSessionLifetime when zero.
	SessionLifetime time.Duration
	// Clock tells sessions' time; the real clock when nil.
	Clock clock.PassiveClock
	Log   logr.Logger
}

// Validate refuses the configurations docs/ui.md lists, each saying why.
func (c *Config) Validate() error {
	if c.REST == nil {
		return errors.New("no kubeconfig: the page needs the cluster's address")
	}
	if c.Decide == nil {
		return errors.New("no decider configured")
	}
	host, _, err := net.SplitHostPort(c.Address)
	if err != nil {
		return fmt.Errorf("--address %q: want host:port: %w", c.Address, err)
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return errors.New("--tls-cert and --tls-key go together: give both or neither")
	}
	loopback := isLoopback(host)
	if !loopback && !c.AddressSet {
		return fmt.Errorf("refusing to listen on %s: the page listens on 127.0.0.1 unless --address names another address explicitly", host)
	}
	if !loopback && c.TLSCert == "" {
		return fmt.Errorf("refusing to listen on %s without TLS: a non-loopback --address needs --tls-cert and --tls-key "+
			"(anyone on the network could read the session and the runs)", c.Address)
	}
	switch c.Auth {
	case AuthKubeconfig:
		if c.Serve {
			return errors.New("--serve needs --auth bearer: a page for a team must act as each request's person, " +
				"never with the kubeconfig's credentials of whoever started it")
		}
	case AuthBearer:
		if !c.Serve {
			return errors.New("--auth bearer is for --serve (server mode behind a single-sign-on proxy); " +
				"without --serve the page acts with your kubeconfig")
		}
	default:
		return fmt.Errorf("--auth %q: must be kubeconfig or bearer", c.Auth)
	}
	return nil
}

// isLoopback reports whether host (an IP or "localhost") is a loopback
// address. Any other name is not: it may resolve anywhere.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

func (c *Config) explain(err error) string {
	if c.Explain != nil {
		return c.Explain(err)
	}
	return err.Error()
}

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
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

func noDecide(context.Context, client.Client, DecideRequest) (*exagentv1.ApprovalDecision, error) {
	return nil, nil
}

func TestConfigValidate(t *testing.T) {
	ok := func(c Config) Config {
		if c.Auth == "" {
			c.Auth = AuthKubeconfig
		}
		c.REST, c.Decide = &rest.Config{Host: "https://127.0.0.1:6443"}, noDecide
		return c
	}
	tc := map[string]struct {
		cfg     Config
		wantErr string
	}{
		"loopback by default":             {cfg: ok(Config{Address: "127.0.0.1:8000"})},
		"ipv6 loopback":                   {cfg: ok(Config{Address: "[::1]:8000"})},
		"localhost":                       {cfg: ok(Config{Address: "localhost:8000"})},
		"another address needs --address": {cfg: ok(Config{Address: "0.0.0.0:8000"}), wantErr: "unless --address"},
		"a name may resolve anywhere":     {cfg: ok(Config{Address: "example.com:8000", AddressSet: true, TLSCert: "c", TLSKey: "k"})},
		"non-loopback without TLS":        {cfg: ok(Config{Address: "0.0.0.0:8443", AddressSet: true}), wantErr: "without TLS"},
		"non-loopback with TLS":           {cfg: ok(Config{Address: "0.0.0.0:8443", AddressSet: true, TLSCert: "c", TLSKey: "k"})},
		"cert without key":                {cfg: ok(Config{Address: "127.0.0.1:8000", TLSCert: "c"}), wantErr: "give both"},
		"serve with bearer":               {cfg: ok(Config{Address: "0.0.0.0:8443", AddressSet: true, TLSCert: "c", TLSKey: "k", Serve: true, Auth: AuthBearer})},
		"serve behind a local proxy":      {cfg: ok(Config{Address: "127.0.0.1:8080", AddressSet: true, Serve: true, Auth: AuthBearer})},
		"serve with the kubeconfig":       {cfg: ok(Config{Address: "127.0.0.1:8080", Serve: true, Auth: AuthKubeconfig}), wantErr: "--serve needs --auth bearer"},
		"bearer without serve":            {cfg: ok(Config{Address: "127.0.0.1:8080", Auth: AuthBearer}), wantErr: "--auth bearer is for --serve"},
		"unknown auth":                    {cfg: ok(Config{Address: "127.0.0.1:8080", Auth: "basic"}), wantErr: `--auth "basic"`},
		"no port":                         {cfg: ok(Config{Address: "127.0.0.1"}), wantErr: "want host:port"},
		"no kubeconfig":                   {cfg: Config{Address: "127.0.0.1:8000", Auth: AuthKubeconfig, Decide: noDecide}, wantErr: "no kubeconfig"},
	}
	for name, tc := range tc {
		t.Run(name, func(t *testing.T) {
			err := tc.cfg.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Validate() = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

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

package egress

import (
	"net/netip"
	"strings"
	"testing"
)

func mustCIDRs(t *testing.T, s string) []netip.Prefix {
	t.Helper()
	p, err := ParseCIDRs(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPolicyCheck covers the rules and their order: an explicit deny
// always wins, the manager's own ports are never reachable, an explicit
// allow lifts a default deny, the cluster's ranges and the default denies
// refuse with the rule named.
func TestPolicyCheck(t *testing.T) {
	cfg := Config{
		Allow:           mustCIDRs(t, "127.0.0.1/32,10.20.0.0/16,169.254.169.254"),
		Deny:            mustCIDRs(t, "10.20.30.0/24,203.0.113.9"),
		ClusterPods:     mustCIDRs(t, "10.244.0.0/16"),
		ClusterServices: mustCIDRs(t, "10.96.0.0/12"),
		OwnPorts:        []Port{{Name: "webhook", Port: 9443}, {Name: "probe", Port: 8081}},
		OwnAddrs:        []netip.Addr{netip.MustParseAddr("10.20.1.5")},
	}
	p := New(cfg)
	tests := map[string]struct {
		policy *Policy
		addr   string
		// want is "" for allowed, else substrings of the refusal.
		want []string
	}{
		"public address: allowed":                     {addr: "93.184.216.34:443"},
		"public IPv6: allowed":                        {addr: "[2606:2800:220:1:248:1893:25c8:1946]:443"},
		"metadata by default":                         {policy: Default(), addr: "169.254.169.254:80", want: []string{"169.254.169.254:80 is a cloud metadata address", "default deny; allow with --egress-allow-cidrs"}},
		"link-local by default":                       {policy: Default(), addr: "169.254.10.1:80", want: []string{"is link-local (default deny"}},
		"IPv6 link-local by default":                  {policy: Default(), addr: "[fe80::1%eth0]:80", want: []string{"[fe80::1]:80 is link-local"}},
		"AWS IPv6 metadata fd00:ec2::254":             {policy: Default(), addr: "[fd00:ec2::254]:80", want: []string{"[fd00:ec2::254]:80 is a cloud metadata address (AWS IPv6)"}},
		"loopback by default":                         {policy: Default(), addr: "127.0.0.1:8080", want: []string{"127.0.0.1:8080 is loopback"}},
		"IPv6 loopback by default":                    {policy: Default(), addr: "[::1]:8080", want: []string{"is loopback"}},
		"unspecified reaches this host: denied":       {policy: Default(), addr: "0.0.0.0:8080", want: []string{"unspecified"}},
		"private-use by default":                      {policy: Default(), addr: "192.168.1.1:80", want: []string{"private-use (RFC 1918)"}},
		"other special-purpose ranges from ssrf":      {policy: Default(), addr: "198.18.0.1:80", want: []string{"special-purpose (198.18.0.0/15, IANA registry)"}},
		"IPv6 outside global unicast":                 {policy: Default(), addr: "[64:ff9b::a9fe:a9fe]:80", want: []string{"outside IPv6 global unicast"}},
		"IPv4-mapped IPv6 metadata is the IPv4 one":   {policy: Default(), addr: "[::ffff:169.254.169.254]:80", want: []string{"169.254.169.254:80 is a cloud metadata address"}},
		"IPv4-mapped IPv6 of an allowed address":      {addr: "[::ffff:127.0.0.1]:8080"},
		"explicit allow lifts loopback":               {addr: "127.0.0.1:8080"},
		"explicit allow is exact: 127.0.0.2 denied":   {addr: "127.0.0.2:8080", want: []string{"127.0.0.2:8080 is loopback"}},
		"explicit allow lifts metadata":               {addr: "169.254.169.254:80"},
		"explicit allow lifts private-use":            {addr: "10.20.5.5:80"},
		"explicit deny wins over allow":               {addr: "10.20.30.4:80", want: []string{"is in 10.20.30.0/24 (--egress-deny-cidrs)", "always denied"}},
		"explicit deny of a public address":           {addr: "203.0.113.9:443", want: []string{"is in 203.0.113.9/32 (--egress-deny-cidrs)"}},
		"cluster pod range":                           {addr: "10.244.3.3:8080", want: []string{"in the cluster's pod range 10.244.0.0/16 (--cluster-pod-cidrs)", "default deny"}},
		"cluster service range":                       {addr: "10.96.0.1:443", want: []string{"in the cluster's service range 10.96.0.0/12"}},
		"own port on loopback, though allowed":        {addr: "127.0.0.1:9443", want: []string{"the manager's own webhook port", "always denied"}},
		"own port on the pod IP, though allowed":      {addr: "10.20.1.5:8081", want: []string{"the manager's own probe port"}},
		"own port on the unspecified address":         {addr: "0.0.0.0:9443", want: []string{"own webhook port"}},
		"own port number elsewhere is just a port":    {addr: "93.184.216.34:9443"},
		"a widened namespace reaches its range":       {policy: Default().Widen(mustCIDRs(t, "127.0.0.0/8")), addr: "127.0.0.5:80"},
		"a widened namespace still obeys the denies":  {policy: p.Widen(mustCIDRs(t, "10.20.30.0/24")), addr: "10.20.30.4:80", want: []string{"--egress-deny-cidrs"}},
		"a widened namespace never reaches own ports": {policy: p.Widen(mustCIDRs(t, "127.0.0.0/8")), addr: "127.0.0.3:9443", want: []string{"own webhook port"}},
		"the hint names the ConfigMap when there is one": {policy: New(Config{AllowHint: "allow with --egress-allow-cidrs, or per namespace in ConfigMap sys/egress"}),
			addr: "10.0.0.1:80", want: []string{"or per namespace in ConfigMap sys/egress"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pol := tc.policy
			if pol == nil {
				pol = p
			}
			err := pol.ControlContext(t.Context(), "tcp4", tc.addr, nil)
			if strings.HasPrefix(tc.addr, "[") {
				err = pol.ControlContext(t.Context(), "tcp6", tc.addr, nil)
			}
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("allowed, want a refusal containing %q", tc.want)
			}
			if _, ok := err.(*DeniedError); !ok {
				t.Errorf("error %T, want *DeniedError", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("refusal %q does not contain %q", err, w)
				}
			}
			if !strings.HasPrefix(err.Error(), "egress denied: ") {
				t.Errorf("refusal %q does not start with \"egress denied: \"", err)
			}
		})
	}
}

func TestControlRefusesOtherNetworks(t *testing.T) {
	if err := New(Config{Allow: mustCIDRs(t, "127.0.0.1")}).ControlContext(t.Context(), "udp4", "127.0.0.1:53", nil); err == nil {
		t.Error("udp allowed, want refused")
	}
}

func TestParseCIDRs(t *testing.T) {
	tests := map[string]struct {
		in      string
		want    string
		wantErr string
	}{
		"empty":                         {in: "", want: ""},
		"list with spaces and empties":  {in: " 10.0.0.0/8, ,fd00::/8,", want: "10.0.0.0/8,fd00::/8"},
		"bare address is one host":      {in: "127.0.0.1,::1", want: "127.0.0.1/32,::1/128"},
		"host bits are masked":          {in: "10.1.2.3/8", want: "10.0.0.0/8"},
		"duplicates folded":             {in: "10.0.0.0/8,10.9.9.9/8", want: "10.0.0.0/8"},
		"IPv4-mapped range is IPv4":     {in: "::ffff:10.0.0.0/104", want: "10.0.0.0/8"},
		"prefix too long":               {in: "10.0.0.0/33", wantErr: `"10.0.0.0/33" is not a CIDR`},
		"not an address":                {in: "example.com", wantErr: `"example.com" is not a CIDR or an IP address`},
		"one bad item fails the list":   {in: "10.0.0.0/8,bogus/8", wantErr: `"bogus/8"`},
		"zones have no place in a CIDR": {in: "fe80::1%eth0", wantErr: "zone"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ParseCIDRs(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s := String(got); s != tc.want {
				t.Errorf("ParseCIDRs(%q) = %q, want %q", tc.in, s, tc.want)
			}
		})
	}
}

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
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"syscall"

	"code.dny.dev/ssrf"
)

// Config is what the manager's flags say about egress.
type Config struct {
	// Allow lifts the default denies for these ranges (--egress-allow-cidrs).
	Allow []netip.Prefix
	// Deny is refused whatever Allow or a namespace's allow-list says
	// (--egress-deny-cidrs).
	Deny []netip.Prefix
	// ClusterPods and ClusterServices are the cluster's pod and service
	// ranges (--cluster-pod-cidrs, --cluster-service-cidrs): denied unless
	// allowed. The manager cannot discover them portably.
	ClusterPods     []netip.Prefix
	ClusterServices []netip.Prefix
	// OwnPorts are the manager's own listening ports (webhook, metrics,
	// probes), refused on OwnAddrs, on loopback and on the unspecified
	// address whatever Allow says: no tool of a tenant talks to the
	// manager's own endpoints.
	OwnPorts []Port
	// OwnAddrs are this process's addresses (its pod IPs).
	OwnAddrs []netip.Addr
	// AllowHint tells, in a refusal of a default deny, how to lift it
	// ("allow with --egress-allow-cidrs" when empty).
	AllowHint string
}

// Port is one of the manager's own listening ports.
type Port struct {
	Name string
	Port uint16
}

// Policy decides whether an address may be dialled. It is immutable and
// safe for concurrent use.
type Policy struct {
	allow     []netip.Prefix
	deny      []netip.Prefix
	cluster   []namedPrefix
	ownPorts  []Port
	ownAddrs  []netip.Addr
	allowHint string
}

type namedPrefix struct {
	prefix netip.Prefix
	what   string
}

// New builds the policy of c.
func New(c Config) *Policy {
	p := &Policy{
		allow:     canonical(c.Allow),
		deny:      canonical(c.Deny),
		ownPorts:  slices.Clone(c.OwnPorts),
		allowHint: c.AllowHint,
	}
	if p.allowHint == "" {
		p.allowHint = "allow with --egress-allow-cidrs"
	}
	for _, pr := range canonical(c.ClusterPods) {
		p.cluster = append(p.cluster, namedPrefix{pr, "in the cluster's pod range " + pr.String() + " (--cluster-pod-cidrs)"})
	}
	for _, pr := range canonical(c.ClusterServices) {
		p.cluster = append(p.cluster, namedPrefix{pr, "in the cluster's service range " + pr.String() + " (--cluster-service-cidrs)"})
	}
	for _, a := range c.OwnAddrs {
		p.ownAddrs = append(p.ownAddrs, a.Unmap().WithZone(""))
	}
	return p
}

// Default is the policy of a manager given no flags: every default deny
// in force, nothing allowed.
func Default() *Policy { return New(Config{}) }

// Widen returns p with allow added to its allowed ranges (a namespace's
// allow-list). Explicit denies and the manager's own ports still win.
func (p *Policy) Widen(allow []netip.Prefix) *Policy {
	if len(allow) == 0 {
		return p
	}
	w := *p
	w.allow = canonical(append(slices.Clone(p.allow), allow...))
	return &w
}

// DeniedError is a refusal: which rule refused which address.
type DeniedError struct {
	Addr netip.AddrPort
	// Rule says what the address is ("link-local", "in 10.0.0.0/8
	// (--egress-deny-cidrs)", …).
	Rule string
	// Hint says how to lift the refusal, or that it cannot be.
	Hint string
}

func (e *DeniedError) Error() string {
	return fmt.Sprintf("egress denied: %s is %s (%s)", e.Addr, e.Rule, e.Hint)
}

// Check returns nil when ap may be dialled, else a *DeniedError. The
// order: an explicit deny; the manager's own ports; an explicit allow;
// the cluster's ranges; the default denies (metadata, link-local,
// loopback, unspecified, private and every other special-purpose range
// of IANA's registries, as code.dny.dev/ssrf keeps them). An IPv4-mapped
// IPv6 address is checked as the IPv4 address it is.
func (p *Policy) Check(ap netip.AddrPort) error {
	addr := ap.Addr().Unmap().WithZone("")
	shown := netip.AddrPortFrom(addr, ap.Port())
	for _, d := range p.deny {
		if d.Contains(addr) {
			return &DeniedError{Addr: shown, Rule: "in " + d.String() + " (--egress-deny-cidrs)", Hint: "always denied"}
		}
	}
	if name, ok := p.ownPort(addr, ap.Port()); ok {
		return &DeniedError{Addr: shown, Rule: "the manager's own " + name + " port", Hint: "always denied"}
	}
	for _, a := range p.allow {
		if a.Contains(addr) {
			return nil
		}
	}
	for _, c := range p.cluster {
		if c.prefix.Contains(addr) {
			return &DeniedError{Addr: shown, Rule: c.what, Hint: "default deny; " + p.allowHint}
		}
	}
	if what, ok := defaultDenied(addr); ok {
		return &DeniedError{Addr: shown, Rule: what, Hint: "default deny; " + p.allowHint}
	}
	return nil
}

func (p *Policy) ownPort(addr netip.Addr, port uint16) (string, bool) {
	i := slices.IndexFunc(p.ownPorts, func(o Port) bool { return o.Port == port })
	if i < 0 {
		return "", false
	}
	if addr.IsLoopback() || addr.IsUnspecified() || slices.Contains(p.ownAddrs, addr) || zeroNet.Contains(addr) {
		return p.ownPorts[i].Name, true
	}
	return "", false
}

// ControlContext is the net.Dialer hook: it runs after DNS, on the very
// address about to be connected, so a name that resolves (or is rebound)
// to a denied address is refused before anything is sent.
func (p *Policy) ControlContext(_ context.Context, network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("egress denied: dialling %q: not an IP and port: %w", address, err)
	}
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return &DeniedError{Addr: ap, Rule: "reached over " + network + ", not TCP", Hint: "always denied"}
	}
	return p.Check(ap)
}

// The default denies with names of their own; the rest of IANA's
// special-purpose ranges come from code.dny.dev/ssrf.
var (
	zeroNet = netip.MustParsePrefix("0.0.0.0/8")
	named   = []namedPrefix{
		// Cloud metadata services: AWS, GCP, Azure, OpenStack (IPv4 and
		// AWS's IPv6), AWS ECS task and EKS pod identity agents, Alibaba.
		{netip.MustParsePrefix("169.254.169.254/32"), "a cloud metadata address"},
		{netip.MustParsePrefix("169.254.170.2/32"), "a cloud metadata address (ECS task metadata)"},
		{netip.MustParsePrefix("169.254.170.23/32"), "a cloud metadata address (EKS pod identity)"},
		{netip.MustParsePrefix("fd00:ec2::254/128"), "a cloud metadata address (AWS IPv6)"},
		{netip.MustParsePrefix("fd00:ec2::23/128"), "a cloud metadata address (EKS pod identity, IPv6)"},
		{netip.MustParsePrefix("100.100.100.200/32"), "a cloud metadata address (Alibaba Cloud)"},
		{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
		{netip.MustParsePrefix("fe80::/10"), "link-local"},
		{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
		{netip.MustParsePrefix("::1/128"), "loopback"},
		{zeroNet, "the unspecified address (this host)"},
		{netip.MustParsePrefix("::/128"), "the unspecified address (this host)"},
		{netip.MustParsePrefix("10.0.0.0/8"), "private-use (RFC 1918)"},
		{netip.MustParsePrefix("172.16.0.0/12"), "private-use (RFC 1918)"},
		{netip.MustParsePrefix("192.168.0.0/16"), "private-use (RFC 1918)"},
		{netip.MustParsePrefix("100.64.0.0/10"), "shared address space (RFC 6598, carrier-grade NAT)"},
		{netip.MustParsePrefix("fc00::/7"), "unique-local (IPv6 ULA)"},
	}
)

// defaultDenied names the default deny addr falls under, if any.
func defaultDenied(addr netip.Addr) (string, bool) {
	for _, n := range named {
		if n.prefix.Contains(addr) {
			return n.what, true
		}
	}
	if addr.Is4() {
		for _, pr := range ssrf.IPv4DeniedPrefixes {
			if pr.Contains(addr) {
				return "special-purpose (" + pr.String() + ", IANA registry)", true
			}
		}
		return "", false
	}
	if !ssrf.IPv6GlobalUnicast.Contains(addr) {
		return "outside IPv6 global unicast (" + ssrf.IPv6GlobalUnicast.String() + ")", true
	}
	for _, pr := range ssrf.IPv6DeniedPrefixes {
		if pr.Contains(addr) {
			return "special-purpose (" + pr.String() + ", IANA registry)", true
		}
	}
	return "", false
}

// canonical masks, unmaps (::ffff:10.0.0.0/104 is 10.0.0.0/8) and
// de-duplicates prefixes.
func canonical(in []netip.Prefix) []netip.Prefix {
	var out []netip.Prefix
	for _, p := range in {
		p = unmapPrefix(p).Masked()
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

func unmapPrefix(p netip.Prefix) netip.Prefix {
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		return netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p
}

// String renders prefixes as a flag takes them.
func String(prefixes []netip.Prefix) string {
	parts := make([]string, len(prefixes))
	for i, p := range prefixes {
		parts[i] = p.String()
	}
	return strings.Join(parts, ",")
}

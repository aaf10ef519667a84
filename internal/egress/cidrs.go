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
	"fmt"
	"net/netip"
	"strings"
)

// ParseCIDRs reads a comma-separated list of CIDRs, as the flags and the
// namespace allow-list write them. A bare address is the one address
// (10.0.0.7 is 10.0.0.7/32). Host bits are masked (10.1.2.3/8 is
// 10.0.0.0/8); an IPv4-mapped IPv6 range is the IPv4 range it maps.
// Empty items are skipped; anything else that is not a CIDR is an error
// naming it.
func ParseCIDRs(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		var p netip.Prefix
		if strings.Contains(item, "/") {
			var err error
			if p, err = netip.ParsePrefix(item); err != nil {
				return nil, fmt.Errorf("%q is not a CIDR (want e.g. 10.0.0.0/8 or fd00::/8)", item)
			}
		} else {
			a, err := netip.ParseAddr(item)
			if err != nil {
				return nil, fmt.Errorf("%q is not a CIDR or an IP address (want e.g. 10.0.0.0/8 or 10.0.0.7)", item)
			}
			if a.Zone() != "" {
				return nil, fmt.Errorf("%q: a CIDR has no zone", item)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		out = append(out, p)
	}
	return canonical(out), nil
}

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

// Package egress owns where the manager's outbound connections may go.
// Every outbound client of the manager that a tenant can aim — http tools,
// MCP servers, model endpoints, notification sinks — dials through a
// Transport of this package, so one Policy decides for all of them
// (docs/architecture.md §14; docs/tenancy.md, "Egress").
//
// The check runs at dial time, after DNS, on the address about to be
// connected (a net.Dialer ControlContext): a name that resolves, or is
// rebound between two requests, to a denied address is refused before a
// byte is sent, and the refusal names the rule and the address
// ("egress denied: 169.254.169.254:80 is a cloud metadata address (default
// deny; allow with --egress-allow-cidrs)"). The order of the rules:
//
//  1. an explicit deny (--egress-deny-cidrs) always wins;
//  2. the manager's own listening ports (webhook, metrics, probes) on its
//     own addresses, loopback or the unspecified address: always denied;
//  3. an explicit allow (--egress-allow-cidrs, or the namespace's entry in
//     the platform team's ConfigMap) lifts every default deny below;
//  4. the cluster's pod and service ranges (--cluster-pod-cidrs,
//     --cluster-service-cidrs), which the manager cannot discover itself;
//  5. the default denies: cloud metadata addresses, link-local, loopback,
//     the unspecified address, private-use (RFC 1918), carrier-grade NAT,
//     IPv6 unique-local, and every other special-purpose range of IANA's
//     registries as code.dny.dev/ssrf keeps them (which is also why every
//     IPv6 address outside 2000::/3 is denied). An IPv4-mapped IPv6
//     address is checked as its IPv4 address.
//
// Everything else — public addresses — is allowed. A namespace's allow-list
// gets a connection pool of its own (bounded in number), so a connection
// dialled under one namespace's wider policy never carries another
// namespace's request. Environment proxies are not used: through a proxy
// the check would see only the proxy. Redirects are never followed
// (NoRedirect): the first answer is the outcome.
package egress

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

package served

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// Namespaces is the set of namespaces a manager serves. The zero value
// serves every namespace.
type Namespaces struct {
	names []string // sorted, unique; nil: every namespace
}

// All is the set of every namespace (the cluster-wide install).
func All() Namespaces { return Namespaces{} }

// Parse reads the --watch-namespaces value: comma-separated namespace
// names (DNS-1123 labels), spaces around them ignored. An empty value is
// every namespace; an empty entry, an invalid name or a repeated one is
// refused with the flag's name, so a typo never silently serves a
// namespace nobody meant.
func Parse(value string) (Namespaces, error) {
	if strings.TrimSpace(value) == "" {
		return All(), nil
	}
	var names []string
	for i, raw := range strings.Split(value, ",") {
		ns := strings.TrimSpace(raw)
		if ns == "" {
			return Namespaces{}, fmt.Errorf("--watch-namespaces %q: entry %d is empty (want ns1,ns2,…)", value, i+1)
		}
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return Namespaces{}, fmt.Errorf("--watch-namespaces %q: %q is not a namespace name: %s", value, ns, strings.Join(errs, "; "))
		}
		if slices.Contains(names, ns) {
			return Namespaces{}, fmt.Errorf("--watch-namespaces %q: %q is listed twice", value, ns)
		}
		names = append(names, ns)
	}
	slices.Sort(names)
	return Namespaces{names: names}, nil
}

// All reports whether every namespace is served.
func (n Namespaces) All() bool { return len(n.names) == 0 }

// Has reports whether namespace ns is served.
func (n Namespaces) Has(ns string) bool {
	if n.All() {
		return true
	}
	_, found := slices.BinarySearch(n.names, ns)
	return found
}

// Names are the served namespaces, sorted; nil when every one is.
func (n Namespaces) Names() []string { return slices.Clone(n.names) }

// String is the flag's form ("" for every namespace).
func (n Namespaces) String() string { return strings.Join(n.names, ",") }

// CacheNamespaces is the manager's cache.Options.DefaultNamespaces: every
// informer lists and watches the served namespaces only (nil: all). An
// object whose cache.ByObject names its own namespaces (the egress
// ConfigMap, in the manager's namespace) keeps them.
func (n Namespaces) CacheNamespaces() map[string]cache.Config {
	if n.All() {
		return nil
	}
	m := make(map[string]cache.Config, len(n.names))
	for _, ns := range n.names {
		m[ns] = cache.Config{}
	}
	return m
}

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
	"sort"
	"sync/atomic"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// +kubebuilder:rbac:groups="",namespace=system,resources=configmaps,verbs=get;list;watch

// ConfigMapAllowLists are the namespace allow-lists of one ConfigMap
// (--egress-namespace-config=NAMESPACE/NAME): each data key is a tenant
// namespace, its value the comma-separated CIDRs that namespace's runs may
// reach beyond the manager's policy. The ConfigMap belongs in the
// manager's own namespace, which tenants cannot write: a tenant must not
// be able to widen its own policy. An entry that does not parse widens
// nothing (it is logged); the ConfigMap missing widens nothing.
type ConfigMapAllowLists struct {
	key types.NamespacedName
	log logr.Logger
	cur atomic.Pointer[map[string][]netip.Prefix]
}

var _ AllowLists = (*ConfigMapAllowLists)(nil)

// NewConfigMapAllowLists reads key's ConfigMap once Set is given it.
func NewConfigMapAllowLists(key types.NamespacedName, log logr.Logger) *ConfigMapAllowLists {
	return &ConfigMapAllowLists{key: key, log: log}
}

// Key is the ConfigMap read.
func (l *ConfigMapAllowLists) Key() types.NamespacedName { return l.key }

// Allowed returns namespace's extra ranges.
func (l *ConfigMapAllowLists) Allowed(namespace string) []netip.Prefix {
	m := l.cur.Load()
	if m == nil {
		return nil
	}
	return (*m)[namespace]
}

// Set replaces the allow-lists with cm's (nil: none).
func (l *ConfigMapAllowLists) Set(cm *corev1.ConfigMap) {
	m := map[string][]netip.Prefix{}
	if cm != nil {
		names := make([]string, 0, len(cm.Data))
		for ns := range cm.Data {
			names = append(names, ns)
		}
		sort.Strings(names)
		for _, ns := range names {
			prefixes, err := ParseCIDRs(cm.Data[ns])
			if err != nil {
				l.log.Error(err, "egress allow-list entry refused: it widens nothing", "configMap", l.key.String(), "namespace", ns)
				continue
			}
			if len(prefixes) > 0 {
				m[ns] = prefixes
			}
		}
		l.log.Info("egress allow-lists read", "configMap", l.key.String(), "namespaces", len(m), "resourceVersion", cm.ResourceVersion)
	}
	l.cur.Store(&m)
}

// CacheByObject is the cache setting that makes the manager watch only
// key's ConfigMap (one namespace, one name): add it to the manager's
// cache.Options.ByObject for &corev1.ConfigMap{}.
func CacheByObject(key types.NamespacedName) cache.ByObject {
	return cache.ByObject{
		Namespaces: map[string]cache.Config{key.Namespace: {}},
		Field:      fields.OneTermEqualSelector("metadata.name", key.Name),
	}
}

// Watch keeps l current from informers (the manager's cache, set up with
// CacheByObject). The cache is synced before the manager starts the
// controllers, so the first run already sees the ConfigMap.
func (l *ConfigMapAllowLists) Watch(ctx context.Context, informers cache.Informers) error {
	inf, err := informers.GetInformer(ctx, &corev1.ConfigMap{})
	if err != nil {
		return fmt.Errorf("watching the egress ConfigMap %s: %w", l.key, err)
	}
	mine := func(obj any) (*corev1.ConfigMap, bool) {
		if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		cm, ok := obj.(*corev1.ConfigMap)
		return cm, ok && cm.Namespace == l.key.Namespace && cm.Name == l.key.Name
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if cm, ok := mine(obj); ok {
				l.Set(cm)
			}
		},
		UpdateFunc: func(_, obj any) {
			if cm, ok := mine(obj); ok {
				l.Set(cm)
			}
		},
		DeleteFunc: func(obj any) {
			if _, ok := mine(obj); ok {
				l.Set(nil)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("watching the egress ConfigMap %s: %w", l.key, err)
	}
	return nil
}

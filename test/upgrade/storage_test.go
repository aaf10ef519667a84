//go:build upgrade

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

package upgrade

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/procs"
)

// migrationTimeout bounds the storage migration after the upgrade: this
// tree's manager (--migrate-storage) creates a StorageVersionMigration per
// CRD, the local kube-controller-manager's storage-version-migrator
// carries them out, and the manager prunes each CRD's storedVersions.
const migrationTimeout = 10 * time.Minute

// migration is what watchMigration saw.
type migration struct {
	// took is from the manager's start to the last CRD seen migrated.
	took time.Duration
	// stored is each exagent.io CRD's status.storedVersions, last seen.
	stored map[string][]string
	// svms are the StorageVersionMigrations and their conditions.
	svms []string
	err  error
}

// storedVersions is each exagent.io CRD's status.storedVersions.
func storedVersions(c client.Client) (map[string][]string, error) {
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := c.List(context.Background(), crds); err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, crd := range crds.Items {
		if crd.Spec.Group == exagentv1.GroupVersion.Group {
			out[crd.Name] = crd.Status.StoredVersions
		}
	}
	return out, nil
}

// watchMigration waits, from started (the manager's start), until every
// exagent.io CRD stores only v1beta1.
func watchMigration(c client.Client, started time.Time) migration {
	var m migration
	m.err = procs.Poll(migrationTimeout, func() (bool, error) {
		stored, err := storedVersions(c)
		if err != nil {
			return false, nil
		}
		m.stored = stored
		for _, v := range stored {
			if len(v) != 1 || v[0] != exagentv1.GroupVersion.Version {
				return false, nil
			}
		}
		return len(stored) > 0, nil
	})
	m.took = time.Since(started)
	svms := &storagemigrationv1.StorageVersionMigrationList{}
	if err := c.List(context.Background(), svms); err != nil {
		m.svms = []string{"listing StorageVersionMigrations: " + err.Error()}
		return m
	}
	for _, s := range svms.Items {
		var conds []string
		for _, cond := range s.Status.Conditions {
			conds = append(conds, fmt.Sprintf("%s=%s", cond.Type, cond.Status))
		}
		m.svms = append(m.svms, fmt.Sprintf("%s (%s) [%s]", s.Name, s.Spec.Resource.String(), strings.Join(conds, " ")))
	}
	sort.Strings(m.svms)
	return m
}

// formatStored is stored on one line, by CRD.
func formatStored(stored map[string][]string) string {
	var parts []string
	for _, name := range sortedKeys(stored) {
		parts = append(parts, fmt.Sprintf("%s=%v", strings.TrimSuffix(name, "."+exagentv1.GroupVersion.Group), stored[name]))
	}
	return strings.Join(parts, " ")
}

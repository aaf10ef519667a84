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

package main

import (
	"fmt"
	"path/filepath"
	"strings"

	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/exagent-io/exagent/controllers"
	"github.com/exagent-io/exagent/internal/crdconversion"
	exagentwebhook "github.com/exagent-io/exagent/webhook"
)

// addCRDConversion adds the Keeper of the CRDs' conversion webhook (with
// --conversion-webhook-service) and the storage Migrator (with
// --migrate-storage) to mgr, unless it serves only some namespaces. Both
// read CRDs with a client of their own, uncached: the manager watches no
// CRD.
func addCRDConversion(mgr ctrl.Manager, f *flags) error {
	log := ctrl.Log.WithName("crdconversion")
	if !f.opts.Namespaces.All() {
		// Namespace-scoped: no right on CRDs, which are the cluster
		// admin's to point and migrate (docs/upgrading.md).
		if f.conversionService != "" || f.migrateStorage {
			log.Info("namespace-scoped (--watch-namespaces): the CRDs' conversion webhook and storage migration are left to the cluster admin")
		}
		return nil
	}
	if f.conversionService == "" && !f.migrateStorage {
		return nil
	}
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return fmt.Errorf("scheme: %w", err)
	}
	if err := storagemigrationv1.AddToScheme(scheme); err != nil {
		return fmt.Errorf("scheme: %w", err)
	}
	c, err := client.New(mgr.GetConfig(), client.Options{Scheme: scheme, Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return fmt.Errorf("CRD client: %w", err)
	}
	if f.conversionService != "" {
		ns, name, ok := strings.Cut(f.conversionService, "/")
		if !ok || ns == "" || name == "" {
			return fmt.Errorf("--conversion-webhook-service %q: want NAMESPACE/NAME", f.conversionService)
		}
		if !f.enableWebhooks {
			return fmt.Errorf("--conversion-webhook-service needs the webhook server (--enable-webhooks)")
		}
		ca := f.conversionCAFile
		if ca == "" {
			if f.webhookCertDir == "" {
				return fmt.Errorf("--conversion-webhook-service needs --conversion-ca-file or --webhook-cert-dir holding ca.crt")
			}
			ca = filepath.Join(f.webhookCertDir, "ca.crt")
		}
		if f.conversionPort <= 0 || f.conversionPort > 65535 {
			return fmt.Errorf("--conversion-webhook-port %d: want 1-65535", f.conversionPort)
		}
		k := &crdconversion.Keeper{
			Client: c, Service: types.NamespacedName{Namespace: ns, Name: name}, Port: int32(f.conversionPort),
			Path: exagentwebhook.ConvertPath, CAFile: ca, Log: log,
		}
		if err := mgr.Add(k); err != nil {
			return fmt.Errorf("conversion keeper: %w", err)
		}
	}
	owner := controllers.Ownership{Serving: f.opts.Shard, Placer: f.opts.Placer}
	if f.migrateStorage && !owner.OwnsChore("storage-migration") {
		log.Info("another shard's leader migrates the stored objects", "shard", f.opts.Shard.Name())
	} else if f.migrateStorage {
		if err := mgr.Add(&crdconversion.Migrator{Client: c, Log: log}); err != nil {
			return fmt.Errorf("storage migrator: %w", err)
		}
	}
	return nil
}

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

package crdconversion

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CRDs are the names of exagent's CustomResourceDefinitions, the only
// ones the manager may read or patch (config/rbac: resourceNames).
var CRDs = []string{
	"agents.exagent.io",
	"agentruns.exagent.io",
	"approvaldecisions.exagent.io",
	"agentrunsegments.exagent.io",
	"conversations.exagent.io",
	"agentschedules.exagent.io",
	"agenttriggers.exagent.io",
	"agentbudgets.exagent.io",
}

// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;patch,resourceNames=agents.exagent.io;agentruns.exagent.io;approvaldecisions.exagent.io;agentrunsegments.exagent.io;conversations.exagent.io;agentschedules.exagent.io;agenttriggers.exagent.io;agentbudgets.exagent.io

// Keeper sets spec.conversion of every CRD of CRDs to the manager's
// conversion webhook: the Service, its port and path, and the CA bundle
// read from CAFile. It is a manager Runnable that every replica runs (the
// patch is idempotent and the same from each).
type Keeper struct {
	// Client reads and patches CRDs (apiextensions.k8s.io/v1 in its scheme).
	Client client.Client
	// Service is the webhook Service; Port its port (443 if 0).
	Service types.NamespacedName
	Port    int32
	// Path is the conversion webhook's path on the server.
	Path string
	// CAFile is a PEM bundle the apiserver is to trust for the Service.
	CAFile string
	// Every is how often the CA file is read again to follow a rotation
	// (10 minutes if 0).
	Every time.Duration
	Log   logr.Logger
}

// NeedLeaderElection is false: every replica keeps the CRDs current.
func (k *Keeper) NeedLeaderElection() bool { return false }

// Start sets the conversion at once, retrying until it is set, then
// checks it again every k.Every until ctx ends.
func (k *Keeper) Start(ctx context.Context) error {
	every := k.Every
	if every <= 0 {
		every = 10 * time.Minute
	}
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		err := wait.ExponentialBackoffWithContext(ctx, wait.Backoff{Duration: time.Second, Factor: 2, Steps: 8, Cap: time.Minute}, func(ctx context.Context) (bool, error) {
			if err := k.Sync(ctx); err != nil {
				k.Log.Error(err, "pointing the CRDs at the conversion webhook; retrying")
				return false, nil
			}
			return true, nil
		})
		if err != nil && ctx.Err() == nil {
			k.Log.Error(err, "the CRDs' conversion webhook is not set; v1alpha1 requests fall back to the CRDs' current conversion")
		}
	}, every)
	return nil
}

// Sync patches every CRD whose conversion differs from the wanted one.
func (k *Keeper) Sync(ctx context.Context) error {
	ca, err := os.ReadFile(k.CAFile)
	if err != nil {
		return fmt.Errorf("reading the conversion webhook's CA bundle: %w", err)
	}
	if !bytes.Contains(ca, []byte("-----BEGIN CERTIFICATE-----")) {
		return fmt.Errorf("%s holds no PEM certificate", k.CAFile)
	}
	want := k.conversion(ca)
	for _, name := range CRDs {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := k.Client.Get(ctx, types.NamespacedName{Name: name}, crd); err != nil {
			return fmt.Errorf("reading CRD %s: %w", name, err)
		}
		if apiequality.Semantic.DeepEqual(crd.Spec.Conversion, want) {
			continue
		}
		// The whole of spec.conversion replaced (a merge patch would keep a
		// url beside the service), fenced by the resourceVersion read: a
		// CRD changed in between (an upgrade applying it) is read again
		// next round.
		patch, err := json.Marshal([]map[string]any{
			{"op": "test", "path": "/metadata/resourceVersion", "value": crd.ResourceVersion},
			{"op": "add", "path": "/spec/conversion", "value": want},
		})
		if err != nil {
			return err
		}
		if err := k.Client.Patch(ctx, crd, client.RawPatch(types.JSONPatchType, patch)); err != nil {
			return fmt.Errorf("setting the conversion webhook of CRD %s: %w", name, err)
		}
		k.Log.Info("CRD converted by the manager's webhook", "crd", name, "service", k.Service.String())
	}
	return nil
}

// conversion is the wanted spec.conversion.
func (k *Keeper) conversion(ca []byte) *apiextensionsv1.CustomResourceConversion {
	port := k.Port
	if port == 0 {
		port = 443
	}
	path := k.Path
	return &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{
			ConversionReviewVersions: []string{"v1"},
			ClientConfig: &apiextensionsv1.WebhookClientConfig{
				Service:  &apiextensionsv1.ServiceReference{Namespace: k.Service.Namespace, Name: k.Service.Name, Path: &path, Port: &port},
				CABundle: ca,
			},
		},
	}
}

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

// Package crdconversion keeps exagent's CRDs pointed at the manager's
// conversion webhook (keeper.go) and moves what an older release stored
// to the storage version (migrator.go).
//
// The CRDs ship without spec.conversion, so they install before any
// manager and with any install method (kubectl apply, Helm's crds/,
// Argo CD); a CRD cannot name the Service of a namespace it does not know
// nor a CA nobody has issued yet. The manager, which knows both
// (--conversion-webhook-service, the CA beside its serving certificate),
// sets each CRD's conversion to Webhook on start and again when the CA
// changes. Until then the apiserver converts with strategy None, which is
// lossless while the two versions share one schema (api/v1beta1's
// TestEveryCRDServesBothVersions).
package crdconversion

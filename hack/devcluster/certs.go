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
	"os"
	"path/filepath"
)

// webhookClientCA is DIR/webhook's CA of the apiserver's client
// certificate: the manager's --webhook-client-ca (hack/lib/devenv.sh).
const webhookClientCA = "client-ca.crt"

// copyFile copies src to dst with mode.
func copyFile(src, dst string, mode os.FileMode) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, mode)
}

// copyWebhookCerts puts the serving pair the registered webhook
// configuration trusts where the manager's --webhook-cert-dir expects it
// (tls.crt, tls.key), plus ca.crt for anyone who wants to call it.
// envtest generates them in a temporary folder it removes on Stop; with
// --data-dir they live in DATA-DIR/webhook.
func copyWebhookCerts(src string, caData []byte, dst string) error {
	for _, name := range []string{"tls.crt", "tls.key"} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			return fmt.Errorf("reading the webhook serving certificate: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dst, name), b, 0o600); err != nil {
			return fmt.Errorf("writing the webhook serving certificate: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(dst, "ca.crt"), caData, 0o644); err != nil {
		return fmt.Errorf("writing the webhook CA: %w", err)
	}
	return nil
}

package main

import (
	"fmt"
	"os"
	"path/filepath"
)

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

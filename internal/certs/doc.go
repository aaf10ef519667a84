// Package certs generates the self-signed CA and serving certificate the
// local control plane and tests use for the admission webhook, where a real
// cluster uses cert-manager (config/certmanager).
package certs

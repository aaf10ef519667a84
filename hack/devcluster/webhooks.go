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
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// readWebhooks reads the webhook configurations of file (config/webhook's
// manifests.yaml, generated for an in-cluster Service) and points every
// webhook at https://host:port/PATH instead, where the manager process
// serves them. envtest then adds the CA bundle it generates. (envtest's own
// rewrite would produce "https://host:port//path".)
func readWebhooks(file, host string, port int) ([]*admissionv1.MutatingWebhookConfiguration, []*admissionv1.ValidatingWebhookConfiguration, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the webhook manifests: %w", err)
	}
	base := "https://" + net.JoinHostPort(host, strconv.Itoa(port))
	var (
		mut []*admissionv1.MutatingWebhookConfiguration
		val []*admissionv1.ValidatingWebhookConfiguration
	)
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return mut, val, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("reading %s: %w", file, err)
		}
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, nil, fmt.Errorf("parsing %s: %w", file, err)
		}
		switch meta.Kind {
		case "MutatingWebhookConfiguration":
			var c admissionv1.MutatingWebhookConfiguration
			if err := yaml.Unmarshal(doc, &c); err != nil {
				return nil, nil, fmt.Errorf("parsing %s: %w", file, err)
			}
			for i := range c.Webhooks {
				pointAt(&c.Webhooks[i].ClientConfig, base)
			}
			mut = append(mut, &c)
		case "ValidatingWebhookConfiguration":
			var c admissionv1.ValidatingWebhookConfiguration
			if err := yaml.Unmarshal(doc, &c); err != nil {
				return nil, nil, fmt.Errorf("parsing %s: %w", file, err)
			}
			for i := range c.Webhooks {
				pointAt(&c.Webhooks[i].ClientConfig, base)
			}
			val = append(val, &c)
		}
	}
}

// pointAt replaces a Service clientConfig with a URL on base, keeping the path.
func pointAt(cc *admissionv1.WebhookClientConfig, base string) {
	path := "/"
	if cc.Service != nil && cc.Service.Path != nil {
		path = "/" + strings.TrimLeft(*cc.Service.Path, "/")
	}
	url := base + path
	cc.URL = &url
	cc.Service = nil
}

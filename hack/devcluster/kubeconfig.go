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
	"net/url"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// clusterName names the dev cluster inside every kubeconfig it writes.
const clusterName = "exagent-dev"

// writeKubeconfig writes a kubeconfig for cfg's client certificate, with one
// context "NAME@exagent-dev" and the namespace left to the user (-n).
func writeKubeconfig(path, userName string, cfg *rest.Config) error {
	u, err := url.Parse(cfg.Host)
	if err != nil {
		return fmt.Errorf("parsing the apiserver address %q: %w", cfg.Host, err)
	}
	server := (&url.URL{Scheme: "https", Host: u.Host}).String()
	ctxName := userName + "@" + clusterName
	kc := clientcmdapi.NewConfig()
	kc.Clusters[clusterName] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[userName] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts[ctxName] = &clientcmdapi.Context{Cluster: clusterName, AuthInfo: userName}
	kc.CurrentContext = ctxName
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

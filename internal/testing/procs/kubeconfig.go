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

package procs

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// WriteKubeconfig writes cfg (an envtest's admin: a client certificate, or
// a bearer token) as a kubeconfig with one context, for a child process
// that takes --kubeconfig.
func WriteKubeconfig(path string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData, CertificateAuthority: cfg.CAFile}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData,
		ClientCertificate: cfg.CertFile, ClientKey: cfg.KeyFile, Token: cfg.BearerToken,
	}
	kc.Contexts["admin@envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "admin@envtest"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("writing the kubeconfig %s: %w", path, err)
	}
	return nil
}

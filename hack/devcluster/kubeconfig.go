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

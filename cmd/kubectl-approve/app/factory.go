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

package app

import (
	"fmt"

	"github.com/spf13/pflag"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// scheme holds the types the plugin reads and writes.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := exagentv1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := authorizationv1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := corev1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

// factory turns kubectl's connection flags (--kubeconfig, --context, -n,
// --as, …) into a client and a namespace, the way kubectl resolves them.
type factory struct {
	flags *genericclioptions.ConfigFlags
}

func newFactory() *factory {
	return &factory{flags: genericclioptions.NewConfigFlags(true)}
}

// AddFlags registers the standard kubectl connection flags.
func (f *factory) AddFlags(fs *pflag.FlagSet) { f.flags.AddFlags(fs) }

// Namespace is -n, else the kubeconfig context's namespace, else "default".
func (f *factory) Namespace() (string, error) {
	ns, _, err := f.flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", fmt.Errorf("resolving the namespace: %w", err)
	}
	return ns, nil
}

// Client returns a client for the exagent and authorization types.
func (f *factory) Client() (client.Client, error) { return f.WatchClient() }

//go:build upgrade

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

package upgrade

import (
	"context"
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/conversion"

	exagentv1alpha1 "github.com/exagent-io/exagent/api/v1alpha1"
	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/testing/testenv"
)

// The test holds every exagent object as v1beta1 (exagentv1: the types
// with this tree's helpers) and speaks to each control plane in a version
// it serves. v0.3.0's apiserver serves exagent.io only as v1alpha1, so
// on its plane every read and write goes out as v1alpha1 (which this
// tree still serves, deprecated): an apiClient of v1alpha1 converts each
// object with api/v1alpha1's Convertibles — the functions this tree's
// conversion webhook runs, on two versions whose schemas are one — so
// v0.3.0's apiserver never sees v1beta1. After the upgrade the test's
// own reads and writes are v1beta1, this tree's storage version; the
// chaos servers' run lookups and the tree script stay on v1alpha1 across
// the upgrade (scenario.reader), so this tree's /convert serves them.

// scheme has the built-in kinds, both exagent versions and the CRDs'.
var scheme = func() *runtime.Scheme {
	s := testenv.Scheme()
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	return s
}()

// apiClient is a client that reads and writes the v1beta1 objects it is
// given as exagent.io version gv, converting them; other kinds pass.
type apiClient struct {
	client.Client
	gv schema.GroupVersion
}

// speak returns c speaking gv.
func speak(c client.Client, gv schema.GroupVersion) client.Client {
	if gv == exagentv1.GroupVersion {
		return c
	}
	return apiClient{Client: c, gv: gv}
}

// wire is the object of gv's kind for o, nil when o passes unconverted.
func (a apiClient) wire(o runtime.Object) (runtime.Object, error) {
	gvks, _, err := scheme.ObjectKinds(o)
	if err != nil {
		return nil, err
	}
	if gvks[0].GroupVersion() != exagentv1.GroupVersion {
		return nil, nil
	}
	return scheme.New(a.gv.WithKind(gvks[0].Kind))
}

func toHub(from runtime.Object, hub runtime.Object) error {
	c, ok := from.(conversion.Convertible)
	h, isHub := hub.(conversion.Hub)
	if !ok || !isHub {
		return fmt.Errorf("converting %T to %T: not a Convertible and its hub", from, hub)
	}
	return c.ConvertTo(h)
}

func fromHub(hub runtime.Object, to runtime.Object) error {
	c, ok := to.(conversion.Convertible)
	h, isHub := hub.(conversion.Hub)
	if !ok || !isHub {
		return fmt.Errorf("converting %T to %T: not a hub and its Convertible", hub, to)
	}
	return c.ConvertFrom(h)
}

func (a apiClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	w, err := a.wire(obj)
	if err != nil {
		return err
	}
	if w == nil {
		return a.Client.Get(ctx, key, obj, opts...)
	}
	if err := a.Client.Get(ctx, key, w.(client.Object), opts...); err != nil {
		return err
	}
	return toHub(w, obj)
}

func (a apiClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	w, err := a.wire(obj)
	if err != nil {
		return err
	}
	if w == nil {
		return a.Client.Create(ctx, obj, opts...)
	}
	if err := fromHub(obj, w); err != nil {
		return err
	}
	if err := a.Client.Create(ctx, w.(client.Object), opts...); err != nil {
		return err
	}
	return toHub(w, obj)
}

func (a apiClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	w, err := a.wire(list)
	if err != nil {
		return err
	}
	if w == nil {
		return a.Client.List(ctx, list, opts...)
	}
	if err := a.Client.List(ctx, w.(client.ObjectList), opts...); err != nil {
		return err
	}
	items, err := meta.ExtractList(w)
	if err != nil {
		return err
	}
	gvks, _, err := scheme.ObjectKinds(list)
	if err != nil {
		return err
	}
	kind := strings.TrimSuffix(gvks[0].Kind, "List")
	hubs := make([]runtime.Object, len(items))
	for i, item := range items {
		if hubs[i], err = scheme.New(exagentv1.GroupVersion.WithKind(kind)); err != nil {
			return err
		}
		if err := toHub(item, hubs[i]); err != nil {
			return err
		}
	}
	list.SetResourceVersion(w.(client.ObjectList).GetResourceVersion())
	return meta.SetList(list, hubs)
}

// v1alpha1 is the version v0.3.0 and this tree both serve.
var v1alpha1 = exagentv1alpha1.GroupVersion

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

package webhook

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/exagent-io/exagent/internal/served"
)

// refuseUnserved returns the denial of a run or decision created in a
// namespace this manager does not serve (nil when it does). A
// namespace-scoped install's webhook configurations select only the
// served namespaces, so this answers only when they select more than
// --watch-namespaces: the object would be admitted, stamped, and then never
// touched — better refused, saying so, than left waiting forever.
func refuseUnserved(n served.Namespaces, gr schema.GroupResource, name, namespace string) error {
	if n.Has(namespace) {
		return nil
	}
	return apierrors.NewForbidden(gr, name, fmt.Errorf(
		"no exagent manager serves namespace %s: this one serves only %s (--watch-namespaces), so nothing would ever run or decide it here; "+
			"create it in one of those namespaces, or ask the platform team to serve %s (docs/install.md, \"Namespace-scoped install\"): "+
			"its webhook configurations select more namespaces than the manager watches",
		namespace, n.String(), namespace))
}

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

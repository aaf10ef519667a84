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
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// Whether an exagent manager serves a run's namespace is read from the run
// itself, not guessed from a timeout. The exagent mutating webhook stamps
// every run it admits (exagentv1.AnnotationAdmittedBy, overwriting what
// the client wrote), and a namespace-scoped install's webhooks are called
// only in the namespaces it serves; a manager writes a phase on every run
// it serves. A run with neither was created where no exagent manager
// serves: nothing will run it, and a decision on it would never be
// applied. (A run admitted before the stamp existed has a phase by now.)

// served reports whether some exagent manager serves run.
func served(run *exagentv1.AgentRun) bool {
	return run.Annotations[exagentv1.AnnotationAdmittedBy] != "" || run.Status.Phase != ""
}

// notServedSentence is what the plugin says about a run no manager serves.
func notServedSentence(run *exagentv1.AgentRun) string {
	return fmt.Sprintf("no exagent manager serves namespace %q: run %q was not admitted by exagent (no %s annotation) "+
		"and no manager has touched it, so nothing will run it and no decision on it would be applied; "+
		"create the run in a namespace exagent serves, or ask your platform team to serve %q (docs/install.md, \"Namespace-scoped install\")",
		run.Namespace, run.Name, exagentv1.AnnotationAdmittedBy, run.Namespace)
}

// errNotServed is nil for a served run, and otherwise the error that ends
// a verb that would act on run or wait for it.
func errNotServed(run *exagentv1.AgentRun) error {
	if served(run) {
		return nil
	}
	return fmt.Errorf("%s", notServedSentence(run))
}

// unservedRun returns a run of namespace ns that no manager serves, if
// there is one: read among the runs no manager has touched (no phase, a
// field selector, one small page), so a served namespace costs one empty
// answer. nil when there is none, or when the apiserver cannot say (a CRD
// without selectable fields): this only adds a note.
func unservedRun(ctx context.Context, c client.Reader, ns string) *exagentv1.AgentRun {
	var page exagentv1.AgentRunList
	untouched := fields.OneTermEqualSelector(exagentv1.FieldStatusPhase, "")
	if err := c.List(ctx, &page, client.InNamespace(ns), client.MatchingFieldsSelector{Selector: untouched}, client.Limit(20)); err != nil {
		return nil
	}
	for i := range page.Items {
		if !served(&page.Items[i]) {
			return &page.Items[i]
		}
	}
	return nil
}

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
	"encoding/json"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/authz"
)

// stampSpecSetter writes exagentv1.AnnotationSpecSetBy on a schedule or
// trigger, overwriting whatever the client wrote: the requesting user
// when the spec changed (or the object is new), and otherwise the value
// (and seal) it had. It reports whether it stamped a new setter — the
// caller then seals it with the spec. The runs such an object makes act
// for that person (DESIGN §19), so only admission may name them.
func stampSpecSetter(req admission.Request, annotations *map[string]string, old map[string]string, changed bool) bool {
	if *annotations == nil {
		*annotations = map[string]string{}
	}
	a := *annotations
	if !changed {
		for _, k := range []string{exagentv1.AnnotationSpecSetBy, exagentv1.AnnotationSpecSetBySignature} {
			if prev, ok := old[k]; ok {
				a[k] = prev
			} else {
				delete(a, k)
			}
		}
		return false
	}
	// An Actor of strings always encodes.
	by, _ := json.Marshal(authz.ActorFromUserInfo(req.UserInfo))
	a[exagentv1.AnnotationSpecSetBy] = string(by)
	delete(a, exagentv1.AnnotationSpecSetBySignature)
	return true
}

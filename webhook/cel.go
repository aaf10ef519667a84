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
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/loop"
)

// validateWhens compiles every rule's CEL when with the engine's own
// compiler (loop.CompilePolicy), so that what admission accepts is exactly
// what the engine evaluates. Each rule is compiled alone to put the error
// on its own field path; when whole, the policy is then compiled as a
// catch-all for anything the engine rejects that no field check named.
func validateWhens(path *field.Path, p *exagentv1.PolicySpec, whole bool) field.ErrorList {
	var errs field.ErrorList
	for i, r := range p.Rules {
		if strings.TrimSpace(r.When) == "" {
			continue
		}
		one := exagentv1.PolicySpec{Rules: []exagentv1.PolicyRule{{
			Tools: []string{"*"}, Action: exagentv1.PolicyAsk, When: r.When,
		}}}
		if _, err := loop.CompilePolicy(one); err != nil {
			msg := strings.TrimPrefix(err.Error(), "policy.rules[0].when: ")
			errs = append(errs, field.Invalid(path.Child("rules").Index(i).Child("when"), r.When, "CEL: "+msg))
		}
	}
	if len(errs) > 0 || !whole {
		return errs
	}
	if _, err := loop.CompilePolicy(*p); err != nil {
		return field.ErrorList{field.Invalid(path, "", fmt.Sprintf("the engine rejects this policy: %v", err))}
	}
	return nil
}

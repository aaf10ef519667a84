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
	"net/url"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// validateObjectName checks a reference to an object in the same
// namespace: required and a DNS-1123 subdomain, like the object's own name.
func validateObjectName(path *field.Path, name string) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	return errs
}

// validateDuration checks a Duration field: unset is always fine (a default
// applies); Never only where allowNever; anything else must parse and be
// positive — a zero timeout is a typo, and Never is how to disable one.
func validateDuration(path *field.Path, d exagentv1.Duration, allowNever bool) field.ErrorList {
	if !d.IsSet() {
		return nil
	}
	if d.IsNever() {
		if allowNever {
			return nil
		}
		return field.ErrorList{field.Invalid(path, string(d), "cannot be Never")}
	}
	v, _, err := d.Parse(0)
	if err != nil {
		return field.ErrorList{field.Invalid(path, string(d), fmt.Sprintf("must be a duration like 90s or 1h30m, or Never: %v", err))}
	}
	if v <= 0 {
		return field.ErrorList{field.Invalid(path, string(d), "must be positive (use Never to disable)")}
	}
	if v > 100*365*24*time.Hour {
		return field.ErrorList{field.Invalid(path, string(d), "must be at most 100 years (use Never to disable)")}
	}
	return nil
}

// validateHTTPURL checks an absolute http(s) URL with a host.
func validateHTTPURL(path *field.Path, raw string, required bool) field.ErrorList {
	if raw == "" {
		if required {
			return field.ErrorList{field.Required(path, "")}
		}
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return field.ErrorList{field.Invalid(path, raw, fmt.Sprintf("must be a URL: %v", err))}
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return field.ErrorList{field.Invalid(path, raw, "must be an http or https URL")}
	}
	if u.Host == "" {
		return field.ErrorList{field.Invalid(path, raw, "must name a host")}
	}
	if u.User != nil {
		return field.ErrorList{field.Invalid(path, raw, "must not carry credentials; use a header or apiKeySecretRef from a Secret")}
	}
	return nil
}

// validateSecretKeySelector checks a Secret reference.
func validateSecretKeySelector(path *field.Path, s exagentv1.SecretKeySelector) field.ErrorList {
	errs := validateObjectName(path.Child("name"), s.Name)
	if s.Key == "" {
		errs = append(errs, field.Required(path.Child("key"), ""))
	} else {
		for _, msg := range validation.IsConfigMapKey(s.Key) {
			errs = append(errs, field.Invalid(path.Child("key"), s.Key, msg))
		}
	}
	return errs
}

// validateActor checks a stamped identity's shape.
func validateActor(path *field.Path, a *exagentv1.Actor) field.ErrorList {
	if a == nil {
		return nil
	}
	if a.Username == "" {
		return field.ErrorList{field.Required(path.Child("username"), "")}
	}
	return nil
}

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
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/model"
)

// validateModelEndpoint checks what a model sends beyond its protocol:
// headers (valid, distinct names the provider does not set itself; no
// Authorization beside apiKeySecretRef, which sets it) and the CA bundle
// (only over https, where it is the only trust).
func validateModelEndpoint(path *field.Path, m *exagentv1.ModelSpec) field.ErrorList {
	var errs field.ErrorList
	if m.Provider == exagentv1.ModelProviderScripted {
		if len(m.Headers) > 0 {
			errs = append(errs, field.Forbidden(path.Child("headers"), "a Scripted model sends no request"))
		}
		if m.CABundleSecretRef != nil {
			errs = append(errs, field.Forbidden(path.Child("caBundleSecretRef"), "a Scripted model sends no request"))
		}
		if m.RateLimit != nil {
			errs = append(errs, field.Forbidden(path.Child("rateLimit"), "a Scripted model sends no request"))
		}
		return errs
	}
	if rl := m.RateLimit; rl != nil {
		p := path.Child("rateLimit")
		if rl.RequestsPerMinute == nil && rl.TokensPerMinute == nil && rl.MaxConcurrent == nil {
			errs = append(errs, field.Required(p, "set at least one of requestsPerMinute, tokensPerMinute, maxConcurrent"))
		}
		if v := rl.RequestsPerMinute; v != nil && (*v < 1 || *v > exagentv1.MaxModelRequestsPerMinute) {
			errs = append(errs, field.Invalid(p.Child("requestsPerMinute"), *v, fmt.Sprintf("must be 1 to %d", exagentv1.MaxModelRequestsPerMinute)))
		}
		if v := rl.TokensPerMinute; v != nil && (*v < 1 || *v > exagentv1.MaxModelTokensPerMinute) {
			errs = append(errs, field.Invalid(p.Child("tokensPerMinute"), *v, fmt.Sprintf("must be 1 to %d", exagentv1.MaxModelTokensPerMinute)))
		}
		if v := rl.MaxConcurrent; v != nil && (*v < 1 || *v > exagentv1.MaxModelConcurrent) {
			errs = append(errs, field.Invalid(p.Child("maxConcurrent"), *v, fmt.Sprintf("must be 1 to %d", exagentv1.MaxModelConcurrent)))
		}
	}
	errs = append(errs, validateRegion(path, m)...)
	errs = append(errs, validateHeaders(path.Child("headers"), m.Headers)...)
	seen := map[string]bool{}
	for i, h := range m.Headers {
		p := path.Child("headers").Index(i).Child("name")
		name := http.CanonicalHeaderKey(h.Name)
		switch {
		case !headerNameRE.MatchString(h.Name):
			// validateHeaders said so
		case seen[name]:
			errs = append(errs, field.Duplicate(p, h.Name))
		case model.ReservedHeader(name):
			errs = append(errs, field.Invalid(p, h.Name, "is set by the model provider itself"))
		case name == "Authorization" && m.APIKeySecretRef != nil:
			errs = append(errs, field.Invalid(p, h.Name, "apiKeySecretRef already sets Authorization: use one or the other"))
		}
		seen[name] = true
	}
	if ca := m.CABundleSecretRef; ca != nil {
		p := path.Child("caBundleSecretRef")
		errs = append(errs, validateSecretKeySelector(p, *ca)...)
		if strings.HasPrefix(strings.ToLower(m.BaseURL), "http://") {
			errs = append(errs, field.Invalid(p, fmt.Sprintf("%s/%s", ca.Name, ca.Key),
				"a CA bundle only applies to an https baseURL; this one is plain http"))
		}
	}
	return errs
}

// validateRegion: Bedrock needs its AWS region and takes its credentials
// from the manager's AWS identity (no key, no header: SigV4 signs the
// request); the others have no region.
func validateRegion(path *field.Path, m *exagentv1.ModelSpec) field.ErrorList {
	var errs field.ErrorList
	if m.Provider != exagentv1.ModelProviderBedrock {
		if m.Region != "" {
			errs = append(errs, field.Forbidden(path.Child("region"), "only with provider Bedrock"))
		}
		return errs
	}
	switch {
	case m.Region == "":
		errs = append(errs, field.Required(path.Child("region"), "provider Bedrock needs the model's AWS region, e.g. us-east-1"))
	case !model.AWSRegion(m.Region):
		errs = append(errs, field.Invalid(path.Child("region"), m.Region, "must be an AWS region, e.g. us-east-1"))
	}
	if m.APIKeySecretRef != nil {
		errs = append(errs, field.Forbidden(path.Child("apiKeySecretRef"),
			"Bedrock uses the manager's AWS identity (IRSA, Pod Identity, the environment), not a key"))
	}
	if len(m.Headers) > 0 {
		errs = append(errs, field.Forbidden(path.Child("headers"), "Bedrock requests are signed with SigV4; extra headers are not sent"))
	}
	if m.BaseURL != "" && model.AWSRegion(m.Region) {
		// A signed request carries the manager's access key id and session
		// token, and can be replayed for minutes: it goes to Bedrock only,
		// never to a host under amazonaws.com that a tenant controls
		// (model/bedrock_endpoint.go). The provider checks it again.
		if why := model.CheckBedrockEndpoint(m.BaseURL, m.Region); why != "" {
			errs = append(errs, field.Invalid(path.Child("baseURL"), m.BaseURL, "a Bedrock baseURL "+why))
		}
	}
	return errs
}

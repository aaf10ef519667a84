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
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// toolNameRule is what toolNameRE admits, as a refusal says it: a tool's
// name is the model's and the journal's (calls[].tool), at most
// exagentv1.MaxIDLength long.
var toolNameRule = fmt.Sprintf("must be 1-%d letters, digits, '_' or '-'", exagentv1.MaxIDLength)

var (
	toolNameRE    = regexp.MustCompile(fmt.Sprintf(`^[a-zA-Z0-9_-]{1,%d}$`, exagentv1.MaxIDLength))
	builtinKindRE = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*(\.[a-z0-9.-]+)?$`)
	headerNameRE  = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

var (
	providers        = []string{string(exagentv1.ModelProviderOpenAI), string(exagentv1.ModelProviderAnthropic), string(exagentv1.ModelProviderBedrock), string(exagentv1.ModelProviderScripted)}
	policyActions    = []string{string(exagentv1.PolicyAllow), string(exagentv1.PolicyAsk), string(exagentv1.PolicyDeny)}
	onDenyActions    = []string{string(exagentv1.OnDenyStop), string(exagentv1.OnDenyContinue)}
	onExpireActions  = []string{string(exagentv1.OnExpireStop), string(exagentv1.OnExpireContinue)}
	builtinOps       = []string{"Get", "List", "Scale", "Patch", "Apply", "Delete", "AskHuman", "EndConversation", "Sleep", "WaitFor", "NewCallback", "WaitForCallback"}
	reservedToolName = "*" // matches every tool in policy rules
)

// ValidateAgent checks an Agent: the model provider's settings, tools
// (unique names, exactly one implementation, parameter schemas that are
// self-contained object schemas valid against the JSON Schema meta-schema),
// the policy (every CEL when compiles, approvers are
// well-formed) and limits. old is unused: an Agent may change, and runs
// notice through their fingerprints.
func ValidateAgent(newObj, _ *exagentv1.Agent) field.ErrorList {
	spec := field.NewPath("spec")
	s := &newObj.Spec
	errs := validateModel(spec.Child("model"), &s.Model)
	errs = append(errs, validateTools(spec.Child("tools"), s.Tools)...)
	errs = append(errs, validatePolicy(spec.Child("policy"), &s.Policy)...)
	errs = append(errs, validateLimits(spec.Child("limits"), &s.Limits)...)
	errs = append(errs, validateNotify(spec.Child("notify"), s.Notify)...) // notify: webhook/notify_validation.go
	errs = append(errs, validateRetention(spec.Child("retention"), &s.Retention)...)
	return errs
}

// validateLimits checks the limits the schema's markers also bound (a
// webhook that runs without the CRD's schema — an older CRD installed —
// still refuses them): activeTime and maxWait, and maxRuns within
// 0…MaxTreeRuns.
func validateLimits(path *field.Path, l *exagentv1.LimitsSpec) field.ErrorList {
	errs := validateDuration(path.Child("activeTime"), l.ActiveTime, true)
	errs = append(errs, validateDuration(path.Child("maxWait"), l.MaxWait, true)...)
	if m := l.MaxRuns; m != nil && (*m < 0 || *m > exagentv1.MaxTreeRuns) {
		errs = append(errs, field.Invalid(path.Child("maxRuns"), *m, fmt.Sprintf(
			"the most runs a delegation tree may create: 0 (no delegation) to %d", exagentv1.MaxTreeRuns)))
	}
	return errs
}

func validateModel(path *field.Path, m *exagentv1.ModelSpec) field.ErrorList {
	var errs field.ErrorList
	switch m.Provider {
	case exagentv1.ModelProviderScripted:
		if len(m.Script) == 0 {
			errs = append(errs, field.Required(path.Child("script"), "provider Scripted replays a script: give at least one turn"))
		}
	case exagentv1.ModelProviderOpenAI, exagentv1.ModelProviderAnthropic, exagentv1.ModelProviderBedrock:
		if m.Name == "" {
			errs = append(errs, field.Required(path.Child("name"), fmt.Sprintf("provider %s needs the model's name", m.Provider)))
		}
		if len(m.Script) > 0 {
			errs = append(errs, field.Forbidden(path.Child("script"), "only with provider Scripted"))
		}
		// baseURL may be empty: the OpenAI default endpoint is used.
	case "":
		errs = append(errs, field.Required(path.Child("provider"), ""))
	default:
		errs = append(errs, field.NotSupported(path.Child("provider"), m.Provider, providers))
	}
	errs = append(errs, validateHTTPURL(path.Child("baseURL"), m.BaseURL, false)...)
	errs = append(errs, validateModelEndpoint(path, m)...) // headers, CA bundle: model_validation.go
	if m.APIKeySecretRef != nil {
		errs = append(errs, validateSecretKeySelector(path.Child("apiKeySecretRef"), *m.APIKeySecretRef)...)
	}
	if m.Temperature != "" {
		if t, err := strconv.ParseFloat(m.Temperature, 64); err != nil || t < 0 || t > 2 {
			errs = append(errs, field.Invalid(path.Child("temperature"), m.Temperature, "must be a decimal between 0 and 2"))
		}
	}
	if m.MaxCompletionTokens != nil && *m.MaxCompletionTokens < 1 {
		errs = append(errs, field.Invalid(path.Child("maxCompletionTokens"), *m.MaxCompletionTokens, "must be at least 1"))
	}
	for i, turn := range m.Script {
		p := path.Child("script").Index(i)
		if turn.Text == "" && len(turn.ToolCalls) == 0 {
			errs = append(errs, field.Required(p, "a script turn needs text or toolCalls"))
		}
		for j, tc := range turn.ToolCalls {
			cp := p.Child("toolCalls").Index(j)
			if tc.Name == "" {
				errs = append(errs, field.Required(cp.Child("name"), ""))
			}
			if len(tc.ID) > exagentv1.MaxIDLength {
				errs = append(errs, field.TooLong(cp.Child("id"), "", exagentv1.MaxIDLength))
			}
			if tc.Arguments != nil && len(tc.Arguments.Raw) > 0 {
				var args map[string]any
				if err := json.Unmarshal(tc.Arguments.Raw, &args); err != nil || args == nil {
					errs = append(errs, field.Invalid(cp.Child("arguments"), "", "must be a JSON object"))
				}
			}
		}
	}
	return errs
}

func validateTools(path *field.Path, tools []exagentv1.ToolSpec) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i := range tools {
		t, p := &tools[i], path.Index(i)
		switch {
		case !toolNameRE.MatchString(t.Name):
			errs = append(errs, field.Invalid(p.Child("name"), t.Name, toolNameRule))
		case seen[t.Name]:
			errs = append(errs, field.Duplicate(p.Child("name"), t.Name))
		}
		seen[t.Name] = true
		if t.Parameters != nil && len(t.Parameters.Raw) > 0 {
			errs = append(errs, validateParameters(p.Child("parameters"), t.Parameters.Raw)...)
		}
		kinds := 0
		if t.HTTP != nil {
			kinds++
			hp := p.Child("http")
			errs = append(errs, validateHTTPURL(hp.Child("url"), t.HTTP.URL, true)...)
			errs = append(errs, validateDuration(hp.Child("timeout"), t.HTTP.Timeout, false)...)
			errs = append(errs, validateHeaders(hp.Child("headers"), t.HTTP.Headers)...)
		}
		if t.MCP != nil {
			kinds++
			errs = append(errs, validateMCP(p, t)...)
		}
		if t.Agent != nil {
			kinds++
			errs = append(errs, validateObjectName(p.Child("agent", "agentRef", "name"), t.Agent.AgentRef.Name)...)
		}
		if t.Builtin != nil {
			kinds++
			errs = append(errs, validateBuiltin(p.Child("builtin"), t.Builtin)...)
		}
		if kinds != 1 {
			errs = append(errs, field.Invalid(p, t.Name, fmt.Sprintf("exactly one of http, mcp, agent or builtin must be set, not %d", kinds)))
		}
	}
	return append(errs, validateVisibleNames(path, tools)...)
}

func validateHeaders(path *field.Path, headers []exagentv1.SecretHeader) field.ErrorList {
	var errs field.ErrorList
	for i, h := range headers {
		p := path.Index(i)
		if !headerNameRE.MatchString(h.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), h.Name, "must be an HTTP header name"))
		}
		errs = append(errs, validateSecretKeySelector(p.Child("valueFrom"), h.ValueFrom)...)
	}
	return errs
}

func validateBuiltin(path *field.Path, b *exagentv1.BuiltinTool) field.ErrorList {
	var errs field.ErrorList
	if !slices.Contains(builtinOps, string(b.Operation)) {
		errs = append(errs, field.NotSupported(path.Child("operation"), b.Operation, builtinOps))
	}
	if b.Operation == exagentv1.BuiltinAskHuman {
		// A question touches nothing in the cluster.
		if len(b.Kinds) > 0 {
			errs = append(errs, field.Forbidden(path.Child("kinds"), "operation AskHuman touches no kinds: remove kinds"))
		}
		if b.AllowSecrets {
			errs = append(errs, field.Forbidden(path.Child("allowSecrets"), "operation AskHuman touches no Secrets: remove allowSecrets"))
		}
		if b.AnswerSchema != nil && len(b.AnswerSchema.Raw) > 0 {
			errs = append(errs, validateAnswerSchema(path.Child("answerSchema"), b.AnswerSchema.Raw)...)
		}
		return errs
	}
	if b.AnswerSchema != nil {
		errs = append(errs, field.Forbidden(path.Child("answerSchema"), "only for operation AskHuman"))
	}
	if b.Operation.TouchesNothing() {
		// Ending a conversation, waiting or making a callback URL touches
		// nothing in the cluster either.
		if len(b.Kinds) > 0 {
			errs = append(errs, field.Forbidden(path.Child("kinds"), fmt.Sprintf("operation %s touches no kinds: remove kinds", b.Operation)))
		}
		if b.AllowSecrets {
			errs = append(errs, field.Forbidden(path.Child("allowSecrets"), fmt.Sprintf("operation %s touches no Secrets: remove allowSecrets", b.Operation)))
		}
		return errs
	}
	if b.Operation == exagentv1.BuiltinWaitFor && b.AllowSecrets {
		// A CEL condition over a Secret would leak its data into the
		// result a bit at a time: WaitFor never reads Secrets.
		errs = append(errs, field.Forbidden(path.Child("allowSecrets"), "operation WaitFor never reads Secrets: remove allowSecrets"))
	}
	if len(b.Kinds) == 0 {
		errs = append(errs, field.Required(path.Child("kinds"), "name the kinds the tool may touch"))
	}
	for i, k := range b.Kinds {
		switch {
		case !builtinKindRE.MatchString(k):
			errs = append(errs, field.Invalid(path.Child("kinds").Index(i), k, "must be Kind or Kind.group, e.g. Deployment.apps"))
		case wellKnownGroups[k] != "":
			// A Kind without a group means the core group, where these kinds
			// do not exist: the tool would fail at every call.
			errs = append(errs, field.Invalid(path.Child("kinds").Index(i), k,
				fmt.Sprintf("%s is not in the core group: write %s.%s", k, k, wellKnownGroups[k])))
		case isCoreSecretKind(k) && b.Operation == exagentv1.BuiltinWaitFor:
			errs = append(errs, field.Forbidden(path.Child("kinds").Index(i), k+": operation WaitFor never reads Secrets"))
		case isCoreSecretKind(k) && !b.AllowSecrets:
			errs = append(errs, field.Forbidden(path.Child("kinds").Index(i), fmt.Sprintf(
				"%s: a builtin tool touches Secrets only with allowSecrets: true, because a Get returns the Secret's data "+
					"into the run's transcript, which everyone who may view the run can read (docs/tools.md)", k)))
		}
	}
	return errs
}

// isCoreSecretKind reports whether a kinds entry names the core group's
// Secret however it is spelled (Secret, SECRET, Secrets, Secret.core). The
// tool checks again on the resolved resource (tools/builtin.go), which no
// spelling escapes; this is the early, clear refusal.
func isCoreSecretKind(k string) bool {
	kind, group, _ := strings.Cut(k, ".")
	kind = strings.ToLower(kind)
	return (kind == "secret" || kind == "secrets") && (group == "" || group == "core")
}

// wellKnownGroups maps built-in kinds outside the core group to their
// group, to catch the common "Deployment" for "Deployment.apps" at
// admission (discovery, which knows every kind, is not the webhook's).
var wellKnownGroups = map[string]string{
	"Deployment": "apps", "StatefulSet": "apps", "DaemonSet": "apps", "ReplicaSet": "apps",
	"Job": "batch", "CronJob": "batch",
	"Ingress": "networking.k8s.io", "NetworkPolicy": "networking.k8s.io",
	"HorizontalPodAutoscaler": "autoscaling", "PodDisruptionBudget": "policy",
	"Role": "rbac.authorization.k8s.io", "RoleBinding": "rbac.authorization.k8s.io",
}

func validatePolicy(path *field.Path, p *exagentv1.PolicySpec) field.ErrorList {
	var errs field.ErrorList
	if p.Default != "" && !slices.Contains(policyActions, string(p.Default)) {
		errs = append(errs, field.NotSupported(path.Child("default"), p.Default, policyActions))
	}
	if p.OnExpire != "" && !slices.Contains(onExpireActions, string(p.OnExpire)) {
		errs = append(errs, field.NotSupported(path.Child("onExpire"), p.OnExpire, onExpireActions))
	}
	if p.OnDeny != "" && !slices.Contains(onDenyActions, string(p.OnDeny)) {
		errs = append(errs, field.NotSupported(path.Child("onDeny"), p.OnDeny, onDenyActions))
	}
	ruleNames := map[string]bool{}
	for i, r := range p.Rules {
		rp := path.Child("rules").Index(i)
		if r.Name != "" {
			if ruleNames[r.Name] {
				// Approvers are shown the rule that asked; two with one name
				// would make that ambiguous.
				errs = append(errs, field.Duplicate(rp.Child("name"), r.Name))
			}
			ruleNames[r.Name] = true
		}
		if len(r.Tools) == 0 {
			errs = append(errs, field.Required(rp.Child("tools"), `name the tools the rule applies to, or "*"`))
		}
		for j, t := range r.Tools {
			if t != reservedToolName && !toolNameRE.MatchString(strings.TrimSuffix(t, "*")) {
				errs = append(errs, field.Invalid(rp.Child("tools").Index(j), t, `must be a tool name, a prefix followed by "*", or "*"`))
			}
		}
		if !slices.Contains(policyActions, string(r.Action)) {
			errs = append(errs, field.NotSupported(rp.Child("action"), r.Action, policyActions))
		}
	}
	// The whole policy is compiled only when every field above is sound.
	errs = append(errs, validateWhens(path, p, len(errs) == 0)...)
	if a := p.Approvers; a != nil {
		ap := path.Child("approvers")
		for i, u := range a.Users {
			if u == "" {
				errs = append(errs, field.Required(ap.Child("users").Index(i), ""))
			}
		}
		for i, g := range a.Groups {
			if g == "" {
				errs = append(errs, field.Required(ap.Child("groups").Index(i), ""))
			}
		}
		for i, sa := range a.ServiceAccounts {
			errs = append(errs, validateServiceAccountRef(ap.Child("serviceAccounts").Index(i), sa)...)
		}
	}
	return errs
}

// validateServiceAccountRef checks "namespace/name", as matched against
// the username system:serviceaccount:namespace:name.
func validateServiceAccountRef(path *field.Path, ref string) field.ErrorList {
	ns, name, ok := strings.Cut(ref, "/")
	if !ok {
		return field.ErrorList{field.Invalid(path, ref, "must be namespace/name")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(ns) {
		errs = append(errs, field.Invalid(path, ref, "namespace: "+msg))
	}
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		errs = append(errs, field.Invalid(path, ref, "name: "+msg))
	}
	return errs
}

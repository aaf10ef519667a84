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
)

// validateMCP checks an mcp tool: the server URL as for http tools (http
// or https, a host, no credentials in it: those come from headers backed by
// Secrets of the run's namespace), tool or import, no parameters (the
// server's tools/list gives the schema), and a usable timeout.
func validateMCP(p *field.Path, t *exagentv1.ToolSpec) field.ErrorList {
	mp := p.Child("mcp")
	m := t.MCP
	errs := validateHTTPURL(mp.Child("url"), m.URL, true)
	errs = append(errs, validateHeaders(mp.Child("headers"), m.Headers)...)
	errs = append(errs, validateDuration(mp.Child("timeout"), m.Timeout, false)...)
	if t.Parameters != nil && len(t.Parameters.Raw) > 0 {
		errs = append(errs, field.Forbidden(p.Child("parameters"),
			"an mcp tool's input schema comes from the server's tools/list; remove parameters"))
	}
	if m.Tool != "" && m.Import != nil {
		errs = append(errs, field.Forbidden(mp.Child("import"), "set tool (one server tool) or import (several), not both"))
	}
	if m.Import == nil {
		return errs
	}
	ip := mp.Child("import")
	prefix := m.ImportPrefix(t.Name)
	if m.Import.Prefix != "" && !toolNameRE.MatchString(m.Import.Prefix) {
		errs = append(errs, field.Invalid(ip.Child("prefix"), m.Import.Prefix, "must be letters, digits, '_' or '-'"))
	}
	seen := map[string]bool{}
	for i, n := range m.Import.Tools {
		switch {
		case seen[n]:
			errs = append(errs, field.Duplicate(ip.Child("tools").Index(i), n))
		case !toolNameRE.MatchString(prefix + n):
			errs = append(errs, field.Invalid(ip.Child("tools").Index(i), n,
				fmt.Sprintf("the model-visible name %q %s", prefix+n, toolNameRule)))
		}
		seen[n] = true
	}
	return errs
}

// validateVisibleNames refuses tool names the model could not tell apart:
// every name an import can produce starts with its prefix, so no other
// tool's model-visible name may start with it and no two prefixes may
// overlap (one a prefix of the other). That holds whatever the server
// lists later, for imports of all its tools too.
func validateVisibleNames(path *field.Path, tools []exagentv1.ToolSpec) field.ErrorList {
	var errs field.ErrorList
	type prefix struct {
		i int
		p string
	}
	var prefixes []prefix
	for i := range tools {
		if m := tools[i].MCP; m != nil && m.Import != nil {
			prefixes = append(prefixes, prefix{i, m.ImportPrefix(tools[i].Name)})
		}
	}
	for _, pr := range prefixes {
		pp := path.Index(pr.i).Child("mcp", "import", "prefix")
		for j := range tools {
			t := &tools[j]
			if j == pr.i || (t.MCP != nil && t.MCP.Import != nil) {
				continue
			}
			if strings.HasPrefix(t.Name, pr.p) {
				errs = append(errs, field.Invalid(pp, pr.p, fmt.Sprintf(
					"tools[%d] %q starts with this prefix: its name could clash with an imported tool's", j, t.Name)))
			}
		}
		for _, other := range prefixes {
			if other.i != pr.i && strings.HasPrefix(other.p, pr.p) && (other.p != pr.p || other.i > pr.i) {
				errs = append(errs, field.Invalid(pp, pr.p, fmt.Sprintf(
					"the import of tools[%d] uses prefix %q, which starts with this one: imported names could clash", other.i, other.p)))
			}
		}
	}
	return errs
}

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

package notify

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Links are the pages a notification points to.
type Links struct {
	// UI is the run's page on the approver's page (kubectl approve ui),
	// from the manager's --ui-url-template.
	UI string `json:"ui,omitempty"`
}

// URLTemplate is the manager's --ui-url-template: a URL in which
// {namespace} and {name} stand for the run's (e.g.
// http://127.0.0.1:8000/runs/{namespace}/{name}, what `kubectl approve
// ui` serves). Empty: notifications carry no link.
type URLTemplate string

// ParseURLTemplate checks a --ui-url-template: an absolute http or https
// URL naming the run by {name}.
func ParseURLTemplate(s string) (URLTemplate, error) {
	if s == "" {
		return "", nil
	}
	if !strings.Contains(s, "{name}") {
		return "", errors.New("--ui-url-template must contain {name} (and usually {namespace}): e.g. http://127.0.0.1:8000/runs/{namespace}/{name}")
	}
	u, err := url.Parse(URLTemplate(s).For("namespace", "name"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("--ui-url-template %q: want an absolute http or https URL, e.g. http://127.0.0.1:8000/runs/{namespace}/{name}", s)
	}
	return URLTemplate(s), nil
}

// For is the link of run namespace/name, each path-escaped (names are
// DNS labels; escaping keeps the URL one URL whatever they hold).
func (t URLTemplate) For(namespace, name string) string {
	if t == "" {
		return ""
	}
	return strings.NewReplacer("{namespace}", url.PathEscape(namespace), "{name}", url.PathEscape(name)).Replace(string(t))
}

// links is what data points to under t.
func (t URLTemplate) links(d Data) *Links {
	if t == "" {
		return nil
	}
	return &Links{UI: t.For(d.Run.Namespace, d.Run.Name)}
}

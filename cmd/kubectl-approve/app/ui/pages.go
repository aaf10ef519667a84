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

package ui

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// assets are the templates, the script and the stylesheet: all of the
// page is in the binary, nothing comes from anywhere else.
//
//go:embed assets
var assets embed.FS

// pages are the parsed templates, one set per page (each page defines
// "content"; layout.html wraps it) plus the fragments the event stream
// sends.
type pages struct {
	byName map[string]*template.Template
}

var pageNames = []string{"inbox", "run", "conversation", "problem"}

var funcs = template.FuncMap{
	"ts": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"tsp": func(t *time.Time) string {
		if t == nil {
			return ""
		}
		return t.UTC().Format(time.RFC3339)
	},
}

func init() {
	for name, f := range cardFuncs {
		funcs[name] = f
	}
}

func loadPages() (*pages, error) {
	p := &pages{byName: map[string]*template.Template{}}
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(assets,
			"assets/templates/layout.html", "assets/templates/parts.html", "assets/templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("parsing the %s page: %w", name, err)
		}
		p.byName[name] = t
	}
	return p, nil
}

// base is what every page shows around its content.
type base struct {
	Title string
	// Who is the person the apiserver sees.
	Who string
	// Scope is the inbox's namespace, or "all namespaces".
	Scope string
	CSRF  string
}

// render writes page name with data, buffered so that a template error
// is a clean 500, not half a page.
func (p *pages) render(w http.ResponseWriter, code int, name string, data any) {
	var b bytes.Buffer
	if err := p.byName[name].ExecuteTemplate(&b, "layout", data); err != nil {
		refuse(w, http.StatusInternalServerError, "The page could not be rendered: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write(b.Bytes())
}

// fragment renders one named template of page name (a row for the event
// stream).
func (p *pages) fragment(name, tmpl string, data any) (string, error) {
	var b bytes.Buffer
	if err := p.byName[name].ExecuteTemplate(&b, tmpl, data); err != nil {
		return "", err
	}
	return b.String(), nil
}

// problemPage is a page that says what went wrong and what to do.
type problemPage struct {
	base
	Message string
}

// problem answers with the problem page; an apiserver error keeps its
// meaning (401 stays 401, 403 stays 403, 404 stays 404).
func (s *Server) problem(q *request, err error) {
	code := http.StatusBadGateway
	switch {
	case apierrors.IsUnauthorized(err):
		code = http.StatusUnauthorized
	case apierrors.IsForbidden(err):
		code = http.StatusForbidden
	case apierrors.IsNotFound(err):
		code = http.StatusNotFound
	}
	s.pages.render(q.w, code, "problem", problemPage{base: s.base(q, "Problem"), Message: s.cfg.explain(err)})
}

func (s *Server) base(q *request, title string) base {
	b := base{Title: title, CSRF: s.sess.csrf(q.session), Scope: s.cfg.Namespace, Who: s.who(q)}
	if s.cfg.AllNamespaces {
		b.Scope = "all namespaces"
	}
	return b
}

// who is the person the apiserver sees for q ("" when it cannot say),
// asked once per request. In local mode it is the kubeconfig's person
// for the life of the process, asked once.
func (s *Server) who(q *request) string {
	if q.whoDone {
		return q.whoName
	}
	if !s.cfg.Serve {
		s.localWho.mu.Lock()
		defer s.localWho.mu.Unlock()
		if s.localWho.name == "" { // a failed question is asked again
			s.localWho.name, _ = whoAmI(q.r, q.c)
		}
		q.whoName = s.localWho.name
	} else if who, err := whoAmI(q.r, q.c); err == nil {
		q.whoName = who
	}
	q.whoDone = true
	return q.whoName
}

func staticHandler() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err)
	}
	return http.FileServerFS(sub)
}

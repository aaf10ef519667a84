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

package served

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	for name, tc := range map[string]struct {
		value     string
		wantNames []string
		wantErr   string
	}{
		"empty is every namespace":  {value: ""},
		"blank is every namespace":  {value: "  "},
		"one":                       {value: "team-a", wantNames: []string{"team-a"}},
		"sorted, spaces trimmed":    {value: " team-b, team-a ", wantNames: []string{"team-a", "team-b"}},
		"empty entry":               {value: "team-a,,team-b", wantErr: "entry 2 is empty"},
		"trailing comma":            {value: "team-a,", wantErr: "entry 2 is empty"},
		"upper case":                {value: "Team-A", wantErr: `"Team-A" is not a namespace name`},
		"a dot":                     {value: "team.a", wantErr: `"team.a" is not a namespace name`},
		"too long":                  {value: strings.Repeat("a", 64), wantErr: "is not a namespace name"},
		"repeated":                  {value: "team-a,team-b,team-a", wantErr: `"team-a" is listed twice`},
		"a namespace/name is no ns": {value: "team-a/x", wantErr: "is not a namespace name"},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := Parse(tc.value)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "--watch-namespaces") {
					t.Fatalf("Parse(%q) error = %v, want one naming the flag and %q", tc.value, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantNames, got.Names()); diff != "" {
				t.Errorf("names (-want +got):\n%s", diff)
			}
			if got.All() != (tc.wantNames == nil) {
				t.Errorf("All() = %v", got.All())
			}
		})
	}
}

func TestHasAndCache(t *testing.T) {
	n, err := Parse("team-b,team-a")
	if err != nil {
		t.Fatal(err)
	}
	for ns, want := range map[string]bool{"team-a": true, "team-b": true, "team-c": false, "": false, "exagent-system": false} {
		if got := n.Has(ns); got != want {
			t.Errorf("Has(%q) = %v, want %v", ns, got, want)
		}
	}
	if got := len(n.CacheNamespaces()); got != 2 {
		t.Errorf("the cache watches %d namespaces, want 2", got)
	}
	if n.String() != "team-a,team-b" {
		t.Errorf("String() = %q", n.String())
	}
	all := All()
	if !all.Has("anything") || all.CacheNamespaces() != nil {
		t.Errorf("every namespace: Has=%v, cache %v", all.Has("anything"), all.CacheNamespaces())
	}
}

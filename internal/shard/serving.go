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

package shard

import (
	"fmt"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// Serving is what one manager serves (--shard): every object (the flag
// not given: an unsharded manager), or the objects of one shard — "" being
// those with no exagent.io/shard label at all (runs created before shards
// were configured, or in a cluster whose webhook stamps none).
type Serving struct {
	sharded bool
	name    string
}

// All is an unsharded manager.
func All() Serving { return Serving{} }

// Only serves shard name ("" the unlabelled objects).
func Only(name string) (Serving, error) {
	if name != "" {
		if err := CheckName(name); err != nil {
			return Serving{}, fmt.Errorf("--shard: %w", err)
		}
	}
	return Serving{sharded: true, name: name}, nil
}

// Sharded reports whether the manager serves one shard only.
func (v Serving) Sharded() bool { return v.sharded }

// Name is the shard served ("" for the unlabelled, or for all).
func (v Serving) Name() string { return v.name }

// String names what is served, for logs.
func (v Serving) String() string {
	switch {
	case !v.sharded:
		return "every shard"
	case v.name == "":
		return "the unlabelled objects"
	}
	return "shard " + v.name
}

// Selector is the label selector of the manager's cache for the sharded
// kinds; nil when every object is served.
func (v Serving) Selector() labels.Selector {
	if !v.sharded {
		return nil
	}
	var req *labels.Requirement
	var err error
	if v.name == "" {
		req, err = labels.NewRequirement(exagentv1.LabelShard, selection.DoesNotExist, nil)
	} else {
		req, err = labels.NewRequirement(exagentv1.LabelShard, selection.Equals, []string{v.name})
	}
	if err != nil { // the name was checked by Only
		panic(fmt.Sprintf("shard selector: %v", err))
	}
	return labels.NewSelector().Add(*req)
}

// Serves reports whether an object with these labels is served.
func (v Serving) Serves(objLabels map[string]string) bool {
	if !v.sharded {
		return true
	}
	got, ok := objLabels[exagentv1.LabelShard]
	if v.name == "" {
		return !ok
	}
	return ok && got == v.name
}

// Owns reports whether the manager owns an object whose place is shard:
// it does when unsharded, or when shard is the one it serves.
func (v Serving) Owns(shard string) bool { return !v.sharded || shard == v.name }

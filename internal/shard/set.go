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
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// MaxShards bounds --shards: each shard is a Deployment and a Lease, and
// the hash weighs every shard for every run it places.
const MaxShards = 64

// Set is the platform team's shard list (--shards): the shards new runs
// are hashed over. The zero value is no list: nothing is stamped.
type Set struct {
	names []string
}

// Parse reads a comma-separated list of shard names; each must be a
// label value of its own (they are values of exagent.io/shard), unique.
// "" is the empty Set.
func Parse(list string) (Set, error) {
	if strings.TrimSpace(list) == "" {
		return Set{}, nil
	}
	var names []string
	for _, raw := range strings.Split(list, ",") {
		name := strings.TrimSpace(raw)
		if name == "" {
			return Set{}, fmt.Errorf("--shards %q: an empty shard name (want a,b,c)", list)
		}
		if err := CheckName(name); err != nil {
			return Set{}, fmt.Errorf("--shards %q: %w", list, err)
		}
		if slices.Contains(names, name) {
			return Set{}, fmt.Errorf("--shards %q: shard %q is listed twice", list, name)
		}
		names = append(names, name)
	}
	if len(names) > MaxShards {
		return Set{}, fmt.Errorf("--shards: %d shards, at most %d", len(names), MaxShards)
	}
	slices.Sort(names)
	return Set{names: names}, nil
}

// CheckName refuses a shard name that is not a non-empty label value.
func CheckName(name string) error {
	if name == "" {
		return fmt.Errorf("a shard name must not be empty")
	}
	if errs := validation.IsValidLabelValue(name); len(errs) > 0 {
		return fmt.Errorf("shard %q is not a label value: %s", name, strings.Join(errs, "; "))
	}
	return nil
}

// Empty reports whether no shard is configured.
func (s Set) Empty() bool { return len(s.names) == 0 }

// Names are the shards, sorted.
func (s Set) Names() []string { return slices.Clone(s.names) }

// Has reports whether name is one of the shards.
func (s Set) Has(name string) bool {
	_, ok := slices.BinarySearch(s.names, name)
	return ok
}

// String is the flag's form.
func (s Set) String() string { return strings.Join(s.names, ",") }

// Assign is the shard of key in namespace: rendezvous (highest random
// weight) hashing, so the answer depends only on the names — never on
// the order of the list, a restart or which process asks — and adding or
// removing one shard moves only the runs that hash to it (about 1/N),
// never runs between the shards that stay. "" when the Set is empty.
func (s Set) Assign(namespace, key string) string {
	best, bestWeight := "", uint64(0)
	for _, name := range s.names {
		if w := weight(name, namespace, key); best == "" || w > bestWeight {
			best, bestWeight = name, w
		}
	}
	return best
}

// weight is shard's weight for namespace/key: the first 8 bytes of the
// SHA-256 of the three, each length-prefixed so no two triples collide.
func weight(shard, namespace, key string) uint64 {
	h := sha256.New()
	for _, part := range []string{shard, namespace, key} {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(part)))
		h.Write(n[:])
		h.Write([]byte(part))
	}
	return binary.BigEndian.Uint64(h.Sum(nil)[:8])
}

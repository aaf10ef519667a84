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

package main

import (
	"errors"
	"flag"
	"fmt"

	"github.com/exagent-io/exagent/internal/shard"
)

// defaultLeaderElectionID is --leader-election-id's default: one Lease for
// an unsharded manager's replicas.
const defaultLeaderElectionID = "exagent-manager.exagent.io"

// parseShards reads --shard and --shards. A shard's managers elect their
// own leader (a Lease per shard, unless --leader-election-id names one):
// leader-only work — retention, notifications, Agent readiness, triggers —
// then runs once per shard, each over its own share.
func (f *flags) parseShards(fs *flag.FlagSet) error {
	set, err := shard.Parse(f.shards)
	if err != nil {
		return err
	}
	f.shardSet = set
	f.opts.Shard = shard.All()
	if f.shardGiven {
		if f.opts.Shard, err = shard.Only(f.shard); err != nil {
			return err
		}
		if f.shard != "" && set.Empty() {
			return fmt.Errorf("--shard=%s needs --shards, the list every manager places new runs on (the same on all of them)", f.shard)
		}
	}
	if !f.opts.Namespaces.All() && (f.shardGiven || !set.Empty()) {
		return errors.New("--shard and --shards cannot be used with --watch-namespaces: a namespace-scoped install is one manager's (docs/install.md, \"Scaling out\")")
	}
	explicitID := false
	fs.Visit(func(fl *flag.Flag) {
		if fl.Name == "leader-election-id" {
			explicitID = true
		}
	})
	if f.opts.Shard.Sharded() && !explicitID {
		f.leaderElectionID = shardLeaseName(f.shard)
	}
	return nil
}

// shardLeaseName is the default Lease of a shard's leader election.
func shardLeaseName(name string) string {
	if name == "" {
		name = "unlabelled"
	}
	return "exagent-manager-" + name + ".exagent.io"
}

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
	"flag"
	"strings"
	"testing"
)

// TestParseShards: --shard and --shards, and the Lease each shard leads by.
func TestParseShards(t *testing.T) {
	for _, tc := range []struct {
		name      string
		args      []string
		serving   string
		shards    string
		lease     string
		refusal   string
		unsharded bool
	}{
		{name: "unsharded by default", args: nil, unsharded: true, lease: defaultLeaderElectionID},
		{name: "one shard", args: []string{"--shard=b", "--shards=c,a,b"}, serving: "shard b", shards: "a,b,c", lease: "exagent-manager-b.exagent.io"},
		{name: "a dedicated shard outside the list", args: []string{"--shard=big-tenant", "--shards=a,b"}, serving: "shard big-tenant", shards: "a,b",
			lease: "exagent-manager-big-tenant.exagent.io"},
		{name: "the unlabelled runs", args: []string{"--shard="}, serving: "the unlabelled objects", lease: "exagent-manager-unlabelled.exagent.io"},
		{name: "an explicit lease wins", args: []string{"--shard=a", "--shards=a", "--leader-election-id=mine"}, serving: "shard a", shards: "a", lease: "mine"},
		{name: "placing without serving one shard", args: []string{"--shards=a,b"}, unsharded: true, shards: "a,b", lease: defaultLeaderElectionID},
		{name: "a shard needs the list", args: []string{"--shard=a"}, refusal: "--shard=a needs --shards"},
		{name: "a bad shard name", args: []string{"--shard=A B", "--shards=a"}, refusal: `--shard: shard "A B" is not a label value`},
		{name: "a bad list", args: []string{"--shards=a,,b"}, refusal: "--shards \"a,,b\": an empty shard name"},
		{name: "not with --watch-namespaces", args: []string{"--shards=a", "--watch-namespaces=team-a"}, refusal: "cannot be used with --watch-namespaces"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _, err := parseFlags(flag.NewFlagSet("manager", flag.ContinueOnError), tc.args)
			if tc.refusal != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refusal) {
					t.Fatalf("err = %v, want %q", err, tc.refusal)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.opts.Shard.Sharded() == tc.unsharded {
				t.Errorf("sharded = %v, want %v", f.opts.Shard.Sharded(), !tc.unsharded)
			}
			if !tc.unsharded && f.opts.Shard.String() != tc.serving {
				t.Errorf("serving %q, want %q", f.opts.Shard.String(), tc.serving)
			}
			if f.shardSet.String() != tc.shards {
				t.Errorf("shards %q, want %q", f.shardSet.String(), tc.shards)
			}
			if f.leaderElectionID != tc.lease {
				t.Errorf("lease %q, want %q", f.leaderElectionID, tc.lease)
			}
		})
	}
}

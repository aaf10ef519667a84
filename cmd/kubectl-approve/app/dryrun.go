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

package app

import (
	"fmt"

	"github.com/spf13/cobra"
)

// dryRun is kubectl's --dry-run strategy.
type dryRun string

const (
	dryRunNone   dryRun = "none"
	dryRunClient dryRun = "client"
	dryRunServer dryRun = "server"
	// dryRunUnset is what a bare --dry-run gives; like kubectl, it is an error.
	dryRunUnset = "unchanged"
)

func addDryRunFlag(cmd *cobra.Command, target *string) {
	cmd.Flags().StringVar(target, "dry-run", string(dryRunNone),
		`Must be "none", "server", or "client". If client strategy, only print the decision that would be sent, without sending it. If server strategy, submit a server-side request without persisting it: admission (actor stamping, authorization) runs, nothing is decided.`)
	cmd.Flags().Lookup("dry-run").NoOptDefVal = dryRunUnset
}

func parseDryRun(v string) (dryRun, error) {
	switch dryRun(v) {
	case dryRunNone, "":
		return dryRunNone, nil
	case dryRunClient:
		return dryRunClient, nil
	case dryRunServer:
		return dryRunServer, nil
	}
	if v == dryRunUnset {
		// kubectl's own words (cmdutil), without the final period Go
		// error strings do not end with.
		return "", fmt.Errorf(`--dry-run flag without a value was specified. A value must be set: "none", "server", or "client"`)
	}
	return "", fmt.Errorf(`invalid dry-run value (%v). Must be "none", "server", or "client"`, v)
}

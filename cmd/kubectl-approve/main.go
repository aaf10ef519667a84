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

// Command kubectl-approve is the kubectl plugin that lists, shows and decides
// the approvals exagent runs are waiting for. Installed on PATH it is called
// as `kubectl approve …`.
package main

import (
	"os"

	"github.com/exagent-io/exagent/cmd/kubectl-approve/app"
)

func main() {
	os.Exit(app.Main(os.Args[1:]))
}

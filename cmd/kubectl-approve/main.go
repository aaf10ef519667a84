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

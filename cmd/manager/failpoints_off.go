//go:build !chaos

package main

import (
	"k8s.io/client-go/rest"

	"github.com/exagent-io/exagent/controllers"
)

// failpoints exist only in a binary built with -tags chaos (the fault
// suite's, test/chaos): a production manager has no hooks and leaves its
// rest.Config alone.
func failpoints(*rest.Config) (controllers.Hooks, error) { return controllers.Hooks{}, nil }

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

// Package life answers the question the manager's long-lived parts ask
// before each step that writes: is the manager stopping? A step runs under
// its own context (a reconcile's, a job's, a worker's), which may outlive
// the manager's: the manager's context ends first, at the stop, and work
// must not start a write after it — what it learned is journaled by the
// next owner instead.
package life

import "context"

// Stopping reports whether work under ctx must stop: ctx ended, or the
// manager's own context did (manager may be nil: none is known).
func Stopping(ctx, manager context.Context) bool {
	return (ctx != nil && ctx.Err() != nil) || (manager != nil && manager.Err() != nil)
}

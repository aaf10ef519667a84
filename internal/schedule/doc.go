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

// Package schedule holds the pure decisions of an AgentSchedule (DESIGN
// §19): which tick is due, which missed tick still runs, what a tick does
// with the runs still open, the name of a tick's run and which ended runs
// the history limits delete. It does no IO and reads no clock: the
// controller passes "now" in, so tests drive time.
package schedule

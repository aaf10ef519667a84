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

// Package eventqueue is the manager's Event recorder. Events are written
// by a few workers from a bounded queue, each created once and never kept.
//
// client-go's events broadcaster, which controller-runtime's recorder wraps,
// starts one goroutine per Event and keeps every Event it sent for six to
// twelve minutes to fold repeats into a series. For exagent that was the
// wrong trade: its Events are about one run and one transition each (they
// rarely repeat), 10,000 runs pausing at once left ~20,000 Events in that
// cache (about 40% of the manager's heap), and 60 approvals at once sent
// their 120 Events concurrently with the status writes that resume the
// runs. Here an Event costs memory only while it waits in the queue, at
// most Options.QueueSize of them; when the queue is full an Event is
// dropped and counted (exagent_events_dropped_total), never blocking the
// controller that records it. At its stop the queue writes what it holds
// for a bounded time (what it has no time for is dropped and counted); an
// Event recorded after the stop is written at once by the one recording it
// (controller-runtime stops this queue before the controllers, whose last
// commits while the manager stops still have their Events).
package eventqueue

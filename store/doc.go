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

// Package store owns the write path of a run: the one place that writes a
// run's status (Store.Commit of a Write: an Update of the status
// subresource with the resourceVersion read, fenced on the owner's claim
// when one is given), the steps that shape a status before it is written
// (CommitSteps: seal the transcript to its hot budget, journal the
// notifications the write makes true, set the attempt's traceparent), the
// transcript segments the seal moves out (Segments: created before the
// write that references them, read past the cache through a bounded LRU),
// the classification of what the apiserver refuses for good
// (UnstorableError) and the shape of the informer cache (CacheOptions:
// waiting runs summarized, ended runs stripped). It tells the manager's
// metrics what it did through an Observer; the reconcilers, the notifier
// and the reaper all write through it.
package store

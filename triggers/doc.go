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

// Package triggers owns the trigger listener (DESIGN §19): the HTTP
// handler behind POST /triggers/NAMESPACE/NAME that turns an
// authenticated webhook or Alertmanager delivery into runs. It reads the
// trigger's configuration through a Lookup and creates runs through a
// Creator (the manager's, which names each run from the trigger, the
// dedup key and its window, so a second replica or a retried delivery
// makes no second run), and decides everything in between with
// internal/trigger: the signature or bearer token, replays, the body's
// bound, the input and dedup key, the dedup window and the hourly rate.
// A request that is not authentic, too large or malformed creates
// nothing and is answered 401, 413 or 400.
package triggers

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

// Package callbacks serves the callback URLs of NewCallback (DESIGN §20,
// docs/waits.md): POST /callbacks/NAMESPACE/RUN-UID/ID?token=TOKEN on the
// trigger listener. The token (an HMAC under the manager's signing key,
// authz.Signer.CallbackToken) is checked in constant time before anything
// about the run is read, so a caller without one learns nothing, not even
// whether the run exists; the body is bounded while read; then a
// Deliverer (the manager's, controllers.CallbackRuns) applies
// loop.DeliverCallback to the run and commits it by compare-and-swap.
//
// Answers: 202 received; 400 not JSON or not matching the waiting call's
// schema (the wait goes on); 401 a bad token; 404 no such run or callback,
// or the run ended; 405 not a POST; 409 received already; 410 expired;
// 413 too large; 503 try again.
package callbacks

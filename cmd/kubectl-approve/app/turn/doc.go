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

// Package turn adds a turn to a Conversation and reads a conversation's
// turns back in order. `kubectl approve say`, `logs CONV`, `list` and the
// approver's page (package ui) all go through it, so a turn added from
// the terminal and one added from the page are the same object, built by
// the same code, created with the person's own client (admission stamps
// the person as its requester and checks the conversation's followUps).
package turn

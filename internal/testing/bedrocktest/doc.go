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

// Package bedrocktest is a test server of ours that speaks Bedrock's
// Converse API on 127.0.0.1 (the SDK reaches it through an endpoint
// override): it checks that each request is SigV4-signed for the bedrock
// service and region, that roles alternate and every toolUse is answered
// by a toolResult, and answers as the test says.
package bedrocktest

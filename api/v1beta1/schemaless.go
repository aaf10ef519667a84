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

package v1beta1

// SchemalessStatusFields are the json names of the AgentRunStatus fields
// whose subtrees the generated AgentRun CRD leaves schemaless
// (x-kubernetes-preserve-unknown-fields: true), the way Argo Workflows ships
// its minimal CRDs (issue 27). The kube-apiserver spends most of a status
// write validating (with ratcheting), pruning and walking for embedded
// resources every field of the schema present in the object, and these
// journal subtrees (calls, history, receipts, …) are where a long run's
// status is big. Only the manager writes AgentRun status, and it keeps the
// journal within its own bounds (bounds.go), so the apiserver's per-field
// check of them bought nothing but CPU.
//
// The Go types and the JSON stay exactly as they are, so runs written
// before resume unchanged; hack/crdschemaless rewrites the CRD after
// controller-gen (make manifests) and renders the documentation of each
// subtree, from the schema controller-gen generated, into the field's
// description, where kubectl explain shows it. Lists keep their type, their
// maxItems and become atomic; objects stay objects.
//
// So the validation markers inside these subtrees (a ToolCall's maxLength,
// a Message's maxItems, …) are documentation, not enforcement: the
// apiserver does not check them, and the manager, their only writer, bounds
// what it writes to the same numbers (bounds.go, loop/bounds.go).
// TestStringBoundsMatchTheCRD and TestCountBoundsMatchTheCRD read them back
// from the rendered documentation, so the documented bound and the code's
// stay one number. Each field of AgentRunStatus listed here says so beside
// its doc comment.
var SchemalessStatusFields = []string{
	"calls",
	"history",
	"receipts",
	"approvals",
	"grants",
	"children",
	"notifications",
	"transcript",
	"cursor",
	"binding",
	"archive",
	"outputRef",
}

// SchemalessDocHeader starts, on a line of its own after the field's own
// description, the documentation of a schemaless field's subtree that
// hack/crdschemaless renders (the tests read it back from there).
const SchemalessDocHeader = "Fields (schemaless: not validated by the apiserver, the manager is their only writer):"

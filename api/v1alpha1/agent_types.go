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

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ModelProvider selects the model client.
// +kubebuilder:validation:Enum=OpenAI;Anthropic;Bedrock;Scripted
type ModelProvider string

// PolicyAction is what the policy says about a tool call.
// +kubebuilder:validation:Enum=Allow;Ask;Deny
type PolicyAction string

// OnDeny says what a denied call does to the run.
// +kubebuilder:validation:Enum=Stop;Continue
type OnDeny string

// OnExpire says what an approval nobody decided before its expiry does to
// the run.
// +kubebuilder:validation:Enum=Stop;Continue
type OnExpire string

// BuiltinOperation is a cluster operation a builtin tool performs.
// +kubebuilder:validation:Enum=Get;List;Scale;Patch;Apply;Delete;AskHuman;EndConversation;Sleep;WaitFor;NewCallback;WaitForCallback
type BuiltinOperation string

// AgentSpec is the trusted template of a run: instructions, model, tools,
// policy and limits. Executable configuration always comes from the current
// Agent; runs store only fingerprints of it.
// +kubebuilder:validation:XValidation:rule="!has(self.tools) || self.tools.all(t, self.tools.exists_one(u, u.name == t.name))",message="tool names must be unique"
type AgentSpec struct {
	// instructions is the system prompt.
	// +optional
	// +kubebuilder:validation:MaxLength=65536
	Instructions string `json:"instructions,omitempty"`

	// model selects and configures the model client.
	// +required
	Model ModelSpec `json:"model"`

	// tools the model may call.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	Tools []ToolSpec `json:"tools,omitempty"`

	// policy decides, per tool call, Allow, Ask (pause for a human) or Deny.
	// +optional
	Policy PolicySpec `json:"policy,omitempty"`

	// limits end a run that uses too much.
	// +optional
	Limits LimitsSpec `json:"limits,omitempty"`

	// serviceAccountNames are ServiceAccounts of the Agent's namespace that
	// its runs may name in spec.serviceAccountName although their creator
	// may not use them: whoever adds a name here vouches for it, and must
	// hold the verb "use" (or "impersonate") on that ServiceAccount.
	// "default" needs no entry (docs/install.md).
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +listType=set
	ServiceAccountNames []string `json:"serviceAccountNames,omitempty"`

	// notify lists the endpoints told when a run of this Agent needs a
	// human or ends (notify_types.go).
	// +optional
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=name
	Notify []NotifySink `json:"notify,omitempty"`

	// retention says how long the ended runs of this Agent are kept, and
	// where their record is archived before they are deleted
	// (retention_types.go). Unset: runs are kept unless the manager has a
	// --default-ttl-seconds-after-finished.
	// +optional
	Retention RetentionSpec `json:"retention,omitempty"`
}

// ModelSpec configures the model client.
// +kubebuilder:validation:XValidation:rule="self.provider != 'Scripted' || (has(self.script) && size(self.script) > 0)",message="provider Scripted needs a non-empty script"
// +kubebuilder:validation:XValidation:rule="self.provider == 'Scripted' || (has(self.name) && size(self.name) > 0)",message="this provider needs a model name"
// +kubebuilder:validation:XValidation:rule="self.provider != 'Bedrock' || (has(self.region) && size(self.region) > 0)",message="provider Bedrock needs a region"
type ModelSpec struct {
	// provider is OpenAI (any OpenAI-compatible chat-completions endpoint),
	// Anthropic (the Messages API), Bedrock (AWS Converse) or Scripted.
	// +required
	Provider ModelProvider `json:"provider"`

	// name of the model, e.g. gpt-4.1-mini.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Name string `json:"name,omitempty"`

	// baseURL of the OpenAI-compatible endpoint; the provider's default when empty.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://`
	BaseURL string `json:"baseURL,omitempty"`

	// region is the AWS region of a Bedrock model (required for Bedrock,
	// refused for the others), e.g. us-east-1.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[a-z]{2}(-[a-z]+)+-[0-9]+$`
	Region string `json:"region,omitempty"`

	// apiKeySecretRef selects the API key.
	// +optional
	APIKeySecretRef *SecretKeySelector `json:"apiKeySecretRef,omitempty"`

	// headers are sent with every model request, values from Secrets: an
	// Azure OpenAI api-key, a gateway's tenant header. Their names (never
	// their values) are part of the model's fingerprint.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	Headers []SecretHeader `json:"headers,omitempty"`

	// caBundleSecretRef selects a Secret key holding PEM CA certificates.
	// When set, the endpoint's certificate must chain to one of them: the
	// system's roots are not trusted for this model (an internal gateway's
	// CA, and only it).
	// +optional
	CABundleSecretRef *SecretKeySelector `json:"caBundleSecretRef,omitempty"`

	// rateLimit bounds the model requests of all runs of this Agent
	// (model_types.go); a provider's own 429 is waited out whether or not
	// it is set.
	// +optional
	RateLimit *ModelRateLimit `json:"rateLimit,omitempty"`

	// pricing is what the model costs per million tokens (model_types.go):
	// set, each model response's cost is charged to the run's ledger
	// (status.ledger.costNanos) and AgentBudgets' costPerMonth count it.
	// Not part of the model's fingerprint.
	// +optional
	Pricing *ModelPricing `json:"pricing,omitempty"`

	// temperature as a decimal string, e.g. "0.2".
	// +optional
	// +kubebuilder:validation:MaxLength=8
	// +kubebuilder:validation:Pattern=`^[0-9](\.[0-9]+)?$`
	Temperature string `json:"temperature,omitempty"`

	// maxCompletionTokens bounds one model response (Anthropic's required
	// max_tokens; unset: the Agent's limits.maxTokens up to 16384, else 4096).
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxCompletionTokens *int64 `json:"maxCompletionTokens,omitempty"`

	// script (Scripted only) is consumed one turn per model request. A run
	// that asks for more turns than the script has fails with ScriptExhausted.
	// +optional
	// +kubebuilder:validation:MaxItems=1024
	// +listType=atomic
	Script []ScriptTurn `json:"script,omitempty"`
}

// ScriptTurn is one scripted model response: text and/or tool calls.
// +kubebuilder:validation:XValidation:rule="has(self.text) || (has(self.toolCalls) && size(self.toolCalls) > 0)",message="a script turn needs text or toolCalls"
type ScriptTurn struct {
	// text is the assistant's message; a turn with text and no tool calls ends the run.
	// +optional
	// +kubebuilder:validation:MaxLength=65536
	Text string `json:"text,omitempty"`

	// toolCalls the model asks for in this turn.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	ToolCalls []ScriptToolCall `json:"toolCalls,omitempty"`
}

// ScriptToolCall is one tool call of a scripted turn.
type ScriptToolCall struct {
	// id of the call; generated from the step and position when empty.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	ID string `json:"id,omitempty"`

	// name of the tool.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Name string `json:"name"`

	// arguments is the JSON object passed to the tool.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	Arguments *runtime.RawExtension `json:"arguments,omitempty"`
}

// ToolSpec is one tool: its model-facing contract and exactly one implementation.
// +kubebuilder:validation:XValidation:rule="[has(self.http), has(self.mcp), has(self.agent), has(self.builtin)].filter(x, x).size() == 1",message="exactly one of http, mcp, agent or builtin must be set"
// +kubebuilder:validation:XValidation:rule="!has(self.mcp) || !has(self.parameters)",message="an mcp tool's parameters come from the server's tools/list: do not set parameters"
type ToolSpec struct {
	// name the model calls the tool by.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9_-]+$`
	Name string `json:"name"`

	// description shown to the model.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Description string `json:"description,omitempty"`

	// parameters is the JSON Schema of the arguments (draft 2020-12 unless
	// $schema names another draft). It must have type "object", nest at
	// most 64 levels, and be self-contained: a $ref or $schema that would
	// load a remote or file URL is refused. Every call's arguments are
	// validated against it before policy and before any IO; a call that
	// does not match fails and the model is told why.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	Parameters *runtime.RawExtension `json:"parameters,omitempty"`

	// http posts the JSON arguments to a URL.
	// +optional
	HTTP *HTTPTool `json:"http,omitempty"`

	// mcp calls a tool of an MCP server over streamable HTTP.
	// +optional
	MCP *MCPTool `json:"mcp,omitempty"`

	// agent delegates to another Agent as a child run.
	// +optional
	Agent *AgentTool `json:"agent,omitempty"`

	// builtin operates on the cluster itself as the run's ServiceAccount.
	// +optional
	Builtin *BuiltinTool `json:"builtin,omitempty"`
}

// HTTPTool posts the call's JSON arguments with an Idempotency-Key header.
type HTTPTool struct {
	// url to POST to.
	// +required
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://`
	URL string `json:"url"`

	// timeout of one request (default 30s).
	// +optional
	// +kubebuilder:validation:XValidation:rule="self != 'Never'",message="timeout cannot be Never"
	Timeout Duration `json:"timeout,omitempty"`

	// idempotent marks the endpoint as safe to re-send with the same
	// Idempotency-Key after an unknown outcome; otherwise such a call becomes Uncertain.
	// +optional
	Idempotent bool `json:"idempotent,omitempty"`

	// headers sent with every request, values from Secrets.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	Headers []SecretHeader `json:"headers,omitempty"`
}

// SecretHeader is an HTTP header whose value comes from a Secret.
type SecretHeader struct {
	// name of the header.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Name string `json:"name"`
	// valueFrom selects the Secret key holding the value.
	// +required
	ValueFrom SecretKeySelector `json:"valueFrom"`
}

// MCPTool is a tool of an MCP server reached over streamable HTTP: either
// one tool (tool, or the ToolSpec name), or several imported under a name
// prefix (import). Input schemas and annotations come from the server's
// tools/list, so spec.tools[].parameters must not be set for an mcp tool.
// +kubebuilder:validation:XValidation:rule="!(has(self.tool) && has(self.import))",message="set tool or import, not both"
type MCPTool struct {
	// url of the MCP server.
	// +required
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://`
	URL string `json:"url"`
	// tool is the server's name for the tool; the ToolSpec name when empty.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Tool string `json:"tool,omitempty"`
	// import makes several tools of the server callable, each under the
	// model-visible name prefix + the server's tool name.
	// +optional
	Import *MCPImport `json:"import,omitempty"`
	// headers sent with every request, values from Secrets (e.g.
	// Authorization: Bearer …).
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	Headers []SecretHeader `json:"headers,omitempty"`
	// timeout of one tools/call (default 60s). Progress notifications do
	// not extend it; set it to the longest call the tool may take.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self != 'Never'",message="timeout cannot be Never"
	Timeout Duration `json:"timeout,omitempty"`
	// idempotent marks the tool(s) as safe to call again with the same
	// idempotency key after an unknown outcome (a timeout, a broken
	// stream); otherwise such a call becomes Uncertain. The server's
	// idempotentHint annotation never sets this.
	// +optional
	Idempotent bool `json:"idempotent,omitempty"`
	// maxInputRounds bounds how many times the server may answer one call
	// with input requests (MCP 2026-07-28 elicitation) before the call
	// fails (default 5).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=20
	MaxInputRounds *int32 `json:"maxInputRounds,omitempty"`
	// sampling says what happens when the server asks the client's model
	// for a completion (an MCP sampling/createMessage input request): Allow
	// (default) sends it to the run's own model as a model request of its
	// own, journaled and charged to the run's ledger under the Agent's
	// limits, with at most the server's maxTokens (and the model's
	// maxCompletionTokens, else 4096); Ask first asks a person to approve
	// the request (answer "approve", or decline); Deny fails the call. The
	// run's transcript is never shared with the server (includeContext is
	// ignored), and only text messages are accepted.
	// +optional
	Sampling MCPSamplingPolicy `json:"sampling,omitempty"`
}

// MCPSamplingPolicy says whether an MCP server may use the run's model.
// +kubebuilder:validation:Enum=Allow;Ask;Deny
type MCPSamplingPolicy string

// MCPImport selects tools of a server to import under a name prefix.
type MCPImport struct {
	// prefix of every imported tool's model-visible name; the ToolSpec name
	// followed by "_" when empty. No other tool's name may start with it.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9_-]*$`
	Prefix string `json:"prefix,omitempty"`
	// tools are the server's names of the tools to import; every tool the
	// server lists when empty (names that do not make a valid model-visible
	// name are then skipped).
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=128
	// +listType=set
	Tools []string `json:"tools,omitempty"`
}

// AgentTool delegates to another Agent in the same namespace.
type AgentTool struct {
	// agentRef names the Agent the child run uses.
	// +required
	AgentRef LocalObjectReference `json:"agentRef"`
}

// BuiltinTool is an operation on named kinds of the cluster, executed by
// impersonating the run's ServiceAccount (WaitFor reads them as it) — or
// AskHuman, a question to a person, EndConversation, which ends a
// conversation, Sleep, a wait, or NewCallback and WaitForCallback, a
// callback: these touch nothing.
// +kubebuilder:validation:XValidation:rule="self.operation in ['AskHuman', 'EndConversation', 'Sleep', 'NewCallback', 'WaitForCallback'] || (has(self.kinds) && size(self.kinds) > 0)",message="kinds is required: the kinds the operation may touch"
// +kubebuilder:validation:XValidation:rule="!(self.operation in ['AskHuman', 'EndConversation', 'Sleep', 'NewCallback', 'WaitForCallback']) || !has(self.kinds)",message="this operation touches no kinds: do not set kinds"
// +kubebuilder:validation:XValidation:rule="self.operation == 'AskHuman' || !has(self.answerSchema)",message="answerSchema is only for operation AskHuman"
type BuiltinTool struct {
	// operation performed.
	// +required
	Operation BuiltinOperation `json:"operation"`
	// kinds the tool may touch, as Kind or Kind.group (Deployment.apps,
	// ConfigMap); a Kind without a group is in the core group. Required
	// for every operation but AskHuman, EndConversation, Sleep,
	// NewCallback and WaitForCallback, which touch none (WaitFor reads
	// only these kinds).
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^[A-Z][A-Za-z0-9]*(\.[a-z0-9.-]+)?$`
	// +listType=set
	Kinds []string `json:"kinds,omitempty"`
	// allowSecrets lets the tool touch Secrets (kind Secret of the core
	// group). Off by default: a Get returns a Secret's data into the run's
	// transcript, which everyone who may view the run (exagent-viewer,
	// view) can read. Without it the webhook refuses a Secret in kinds and
	// the tool refuses every call that would touch one.
	// +optional
	AllowSecrets bool `json:"allowSecrets,omitempty"`
	// answerSchema (AskHuman only) is the JSON Schema every answer must
	// match, checked when the answer is admitted (draft 2020-12 unless
	// $schema names another; self-contained, at most 64 levels). Unset: a
	// string, one of the call's choices when the model offers some.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	AnswerSchema *runtime.RawExtension `json:"answerSchema,omitempty"`
}

// PolicySpec decides what each tool call may do and who may decide.
type PolicySpec struct {
	// default action for calls no rule matches (Ask when unset).
	// +optional
	// +kubebuilder:default=Ask
	Default PolicyAction `json:"default,omitempty"`

	// rules are evaluated in order; the first whose tools and when match decides.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	Rules []PolicyRule `json:"rules,omitempty"`

	// approvers narrows, when set, who may decide beyond RBAC. An empty
	// list means RBAC alone, never "everyone".
	// +optional
	Approvers *Approvers `json:"approvers,omitempty"`

	// forbidSelfApproval rejects decisions by the run's requester.
	// +optional
	ForbidSelfApproval bool `json:"forbidSelfApproval,omitempty"`

	// onDeny is Stop (the run ends Denied) or Continue (the model is told).
	// +optional
	// +kubebuilder:default=Stop
	OnDeny OnDeny `json:"onDeny,omitempty"`

	// onExpire is what an approval nobody decided before its
	// approvalTimeout does: Stop (the default; the run ends Expired,
	// ApprovalExpired) or Continue (the call is Refused without running,
	// the model is told that nobody approved it in time, and the run goes
	// on). A decision after the expiry is rejected either way.
	// +optional
	OnExpire OnExpire `json:"onExpire,omitempty"`
}

// PolicyRule matches tool calls by tool name and an optional CEL condition.
// +kubebuilder:validation:XValidation:rule="self.action == 'Ask' || !has(self.quorum)",message="quorum is only for rules with action Ask"
type PolicyRule struct {
	// name of the rule, shown to approvers.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Name string `json:"name,omitempty"`

	// tools the rule applies to; "*" matches every tool and "prefix*"
	// every tool whose name starts with prefix (e.g. an mcp import's).
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=64
	// +listType=atomic
	Tools []string `json:"tools"`

	// action when the rule matches.
	// +required
	Action PolicyAction `json:"action"`

	// when is a CEL expression over `args` (the call's arguments) and
	// `tool` ({name, annotations}: an mcp tool's readOnlyHint,
	// destructiveHint, idempotentHint, openWorldHint and title; empty for
	// other kinds) that must be true for the rule to match. One that fails
	// to evaluate means Ask. Annotations are the server's claims: they
	// never allow a call or make it idempotent unless a rule says so.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	When string `json:"when,omitempty"`

	// editable says whether an approver may edit a call this rule asks
	// about before approving it (kubectl approve --set / --args-file). Unset
	// means yes, except for builtin tools, whose calls are edited only when
	// a rule sets editable: true.
	// +optional
	Editable *bool `json:"editable,omitempty"`

	// sticky says whether an approver may approve a call this rule asks
	// about for the rest of the run (kubectl approve --for-run, decision
	// scope Run): later calls of the same tool that this rule asks about
	// then run without asking while the tool's binding and the policy are
	// unchanged. Unset means yes; set false where every call must be seen.
	// +optional
	Sticky *bool `json:"sticky,omitempty"`

	// quorum (action Ask only) is how many distinct approvers, in total and
	// per group, must approve a call before it runs. Unset: one approval.
	// +optional
	Quorum *Quorum `json:"quorum,omitempty"`

	// onExpire overrides policy.onExpire for the approvals this rule asks.
	// +optional
	OnExpire OnExpire `json:"onExpire,omitempty"`
}

// Quorum is a two-person (or more) sign-off: each distinct authorized
// approver's Approve is one vote; the call is approved once the votes meet
// approvals and every group's count, and any eligible Deny denies it.
// +kubebuilder:validation:XValidation:rule="has(self.approvals) || (has(self.groups) && size(self.groups) > 0)",message="a quorum needs approvals or groups"
type Quorum struct {
	// approvals is the number of distinct approvers needed in total. Unset:
	// the sum of the groups' counts.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=16
	Approvals int32 `json:"approvals,omitempty"`

	// groups are per-group minimums: count votes by members of group (as
	// the apiserver authenticated them). One person counts once in the
	// total, and in every group they belong to.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=group
	Groups []GroupQuorum `json:"groups,omitempty"`
}

// GroupQuorum is one group's minimum number of votes.
type GroupQuorum struct {
	// group name, as the authenticator reports it (e.g. an OIDC group).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Group string `json:"group"`
	// count of votes needed from members of group.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=16
	Count int32 `json:"count"`
}

// Approvers lists who may decide, in addition to holding the RBAC verb.
type Approvers struct {
	// users by username.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=512
	// +listType=set
	Users []string `json:"users,omitempty"`
	// groups by name.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=512
	// +listType=set
	Groups []string `json:"groups,omitempty"`
	// serviceAccounts as namespace/name.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=317
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9-]+/[a-z0-9.-]+$`
	// +listType=set
	ServiceAccounts []string `json:"serviceAccounts,omitempty"`
}

// LimitsSpec bounds a run; reaching a limit ends it Failed with a clear reason.
type LimitsSpec struct {
	// maxSteps is the most model requests a run may make.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxSteps *int32 `json:"maxSteps,omitempty"`
	// maxToolCalls is the most tool calls a run may start.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxToolCalls *int32 `json:"maxToolCalls,omitempty"`
	// maxTokens is the most model tokens (prompt + completion) a run may use.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxTokens *int64 `json:"maxTokens,omitempty"`
	// activeTime bounds the time a process owns the run; human waiting is not charged.
	// +optional
	ActiveTime Duration `json:"activeTime,omitempty"`
	// maxTranscriptBytes bounds the run's logical transcript (messages, tool
	// arguments and results, in status and in its AgentRunSegments); a run
	// that would pass it ends Failed (TranscriptTooLarge) before the IO.
	// Default 8 MiB, at most 64 MiB; the manager's --max-transcript-bytes
	// may cap it lower for the whole cluster (the run's message says so
	// when the cap is what ends it).
	// +optional
	// +kubebuilder:validation:Minimum=65536
	// +kubebuilder:validation:Maximum=67108864
	MaxTranscriptBytes *int64 `json:"maxTranscriptBytes,omitempty"`
	// maxDepth bounds how deep delegation goes below a run of this Agent
	// (default 3: a root run, its children, grandchildren and their
	// children); a delegation call past it fails with MaxDepthExceeded.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=16
	MaxDepth *int32 `json:"maxDepth,omitempty"`
	// maxRuns bounds how many child runs a whole delegation tree below a
	// run of this Agent may create, at every depth (default 32). Each child
	// is given a share of it (spec.delegation.limits.maxRuns), reserved
	// out of its parent's when it is created; a delegation call past it
	// fails with LimitExceeded and the model is told.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1024
	MaxRuns *int32 `json:"maxRuns,omitempty"`
	// maxWait bounds one wait of a run (a Sleep, WaitFor or
	// WaitForCallback call): a longer duration or timeout is a failed call
	// the model sees, naming the limit; a wait with no timeout lasts at
	// most this. Default 24h; a wait never lasts past the run's deadline.
	// Waiting is not active time.
	// +optional
	MaxWait Duration `json:"maxWait,omitempty"`
}

// AgentStatus is the observed state of an Agent: whether what it names
// works (docs/architecture.md §15; docs/tools.md, "Is my Agent ready?"). The manager
// checks it when its spec changes and on a period (--agent-recheck-interval;
// sooner, with backoff, while it is not Ready) and writes it only when
// something changed. Ready is information, never a gate: runs of an
// Agent that is not Ready start as they would anyway.
type AgentStatus struct {
	// conditions of the Agent: Ready (True when every check passed,
	// False with the first failing check's reason, Unknown while a check
	// is under way), and the kstatus conditions Reconciling (True while
	// Ready is Unknown) and Stalled (True while Ready is False).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// observedGeneration is the generation last checked.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// tools is what the last check found of each tool, in spec order.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Tools []AgentToolStatus `json:"tools,omitempty"`
	// budgets are the AgentBudgets of the namespace that select this
	// Agent, with their spend against each limit (budget_types.go).
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	Budgets []AgentBudgetUse `json:"budgets,omitempty"`
}

// AgentToolStatus is what the last check found of one tool.
type AgentToolStatus struct {
	// name of the tool (spec.tools[].name).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	Name string `json:"name"`
	// kind of the tool: http, mcp, agent or builtin.
	// +required
	// +kubebuilder:validation:MaxLength=16
	Kind string `json:"kind"`
	// ready is true when every check of the tool passed: the Secrets its
	// headers name hold their keys, its parameters schema compiles, its
	// MCP server answers tools/list and offers the tools it names, the
	// Agent it delegates to exists.
	// +required
	Ready bool `json:"ready"`
	// reason (PascalCase) the tool is not ready — Checking while its MCP
	// server's first tools/list is under way; empty when it is ready.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Reason string `json:"reason,omitempty"`
	// message says what is wrong and what to do; for a ready mcp tool,
	// what its server offers.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ag,categories=exagent
// +kubebuilder:deprecatedversion:warning="exagent.io/v1alpha1 Agent is deprecated; use exagent.io/v1beta1 Agent (docs/upgrading.md)"
// +kubebuilder:printcolumn:name="PROVIDER",type=string,JSONPath=`.spec.model.provider`
// +kubebuilder:printcolumn:name="MODEL",type=string,JSONPath=`.spec.model.name`
// +kubebuilder:printcolumn:name="READY",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="REASON",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="MESSAGE",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1

// Agent is the trusted template of agent runs: instructions, model, tools,
// policy and limits.
type Agent struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the Agent's object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the template every run of this Agent follows.
	// +required
	Spec AgentSpec `json:"spec"`
	// status says whether the Agent works. It defaults to
	// observedGeneration 0, so an Agent not checked yet reads as in
	// progress to kstatus, Flux and Argo CD (generation 1 not observed)
	// rather than as a resource without status, which kstatus calls Current.
	// +optional
	// +kubebuilder:default={observedGeneration: 0}
	Status AgentStatus `json:"status,omitempty,omitzero"`
}

// +kubebuilder:object:root=true

// AgentList is a list of Agents.
type AgentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Agent `json:"items"`
}

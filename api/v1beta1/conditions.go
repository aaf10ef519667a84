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

// Condition types of AgentRun. The names are fixed: `kubectl wait
// --for=condition=AwaitingApproval` and tests outside the project use them.
const (
	// ConditionReady is True only when the run Succeeded; False otherwise,
	// with the reason of the phase (or of what the run waits for).
	ConditionReady            = "Ready"
	ConditionAwaitingApproval = "AwaitingApproval"
	ConditionUncertain        = "Uncertain"
	// ConditionWaiting is True while the run is Waiting, its message naming
	// the calls that wait and until when.
	ConditionWaiting = "Waiting"
	// ConditionEnded is True once the run ended, however (Succeeded, Failed,
	// Denied, Cancelled, Expired), with the phase as reason:
	// `kubectl wait --for=condition=Ended` returns for every outcome.
	ConditionEnded = "Ended"
	// ConditionSucceeded is absent while the run has not ended, then True
	// (Succeeded) or False (any other end, status.reason as reason):
	// `kubectl wait --for=condition=Succeeded=False` catches a failure.
	// A run reports only conditions that say something: Ready and Ended
	// always, AwaitingApproval, Uncertain, Reconciling and Stalled only
	// while True (absent reads as False to kubectl wait and kstatus).
	ConditionSucceeded = "Succeeded"
	// ConditionReconciling and ConditionStalled are the kstatus abnormal-true
	// conditions (sigs.k8s.io/cli-utils kstatus, Flux, Argo CD's kstatus
	// users): Reconciling is True while the run has not ended (a run waiting
	// for a human is in progress), Stalled is True when it ended other than
	// Succeeded (kstatus Failed). A Succeeded run has neither: Current.
	ConditionReconciling = "Reconciling"
	ConditionStalled     = "Stalled"
)

// Condition and status reasons (PascalCase).
const (
	ReasonAgentNotFound        = "AgentNotFound"
	ReasonDefinitionChanged    = "DefinitionChanged"
	ReasonToolKindNotSupported = "ToolKindNotSupported"
	ReasonScriptExhausted      = "ScriptExhausted"
	ReasonLimitExceeded        = "LimitExceeded"
	ReasonDeadlineExceeded     = "DeadlineExceeded"
	ReasonApprovalExpired      = "ApprovalExpired"
	ReasonDenied               = "Denied"
	ReasonCancelled            = "Cancelled"
	ReasonSucceeded            = "Succeeded"
	ReasonRunning              = "Running"
	ReasonQueued               = "Queued"
	// ReasonWaiting: the run waits (phase Waiting) for its waiting calls.
	ReasonWaiting = "Waiting"
	// ReasonWoken: the waits of the run ended; it is queued for its next step.
	ReasonWoken = "Woken"
	// ReasonTooManyWaits: a waiting call was refused, the model told: its
	// namespace has as many waiting runs as the manager allows
	// (--max-waiting-runs-per-namespace) or watches as many objects.
	ReasonTooManyWaits        = "TooManyWaits"
	ReasonPending             = "ApprovalPending"
	ReasonOutcomeUncertain    = "OutcomeUncertain"
	ReasonInvalidContinuation = "InvalidContinuation"
	ReasonModelError          = "ModelError"
	// ReasonModelRequestRetriesExhausted: the answer to one step's model
	// request was lost (owner crashed, lost its lease, stopped) more often
	// than the bound allows; each re-send was charged.
	ReasonModelRequestRetriesExhausted = "ModelRequestRetriesExhausted"
	// ReasonCorruptStatus: the stored status contradicts itself (an approval
	// naming a missing call, an unknown state, a duplicate id, …); no
	// transition writes that, so the run ends Failed rather than guess.
	ReasonCorruptStatus = "CorruptStatus"
	// ReasonNotStarted is the reason of conditions of a run no controller has seen yet.
	ReasonNotStarted = "NotStarted"
	// ReasonNoApprovalPending was AwaitingApproval=False's reason (runs
	// written before issue 27 carry it; the condition is now absent then).
	ReasonNoApprovalPending = "NoApprovalPending"
	// ReasonNoUncertainCall was Uncertain=False's reason (as above).
	ReasonNoUncertainCall = "NoUncertainCall"
	// ReasonNotEnded was Succeeded=Unknown's and Stalled=False's reason while
	// the run went on (as above).
	ReasonNotEnded = "NotEnded"
	// ReasonMCPServerUnavailable: the tools/list of an mcp tool's server
	// could not be read (unreachable, refused the credentials, not an MCP
	// server); no new IO starts until it answers, since no call can be
	// validated or bound without its schemas.
	ReasonMCPServerUnavailable = "MCPServerUnavailable"
	// ReasonTranscriptTooLarge: the next IO could take the transcript past
	// the Agent's limits.maxTranscriptBytes (or the manager's
	// --max-transcript-bytes, when lower); the run ends before it.
	ReasonTranscriptTooLarge = "TranscriptTooLarge"
	// ReasonTranscriptCorrupt: a segment of the run's sealed transcript is
	// missing, was edited or is out of order (its hash chain does not hold);
	// the run ends before any IO rather than send a transcript it cannot prove.
	ReasonTranscriptCorrupt = "TranscriptCorrupt"
	// ReasonStatusTooLarge: the run's status would pass the size it may
	// take (the engine's budget, or the apiserver refused the write as too
	// large); the run ends before the IO when the engine sees it coming,
	// or, when only the store could tell, after journaling what is known.
	ReasonStatusTooLarge = "StatusTooLarge"
	// ReasonStatusRejected: the apiserver refused the run's status as
	// invalid (HTTP 422) — a write that can never succeed; the run ends
	// after journaling what is known, instead of retrying it for ever.
	ReasonStatusRejected = "StatusRejected"
	// ReasonSegmentQuotaExceeded: a transcript segment the run must seal
	// was refused by a ResourceQuota of its namespace (count of
	// agentrunsegments.exagent.io, docs/architecture.md §15); the run ends after
	// journaling what is known, instead of retrying until someone raises
	// the quota. The message names the quota.
	ReasonSegmentQuotaExceeded = "SegmentQuotaExceeded"
	// ReasonEgressDenied: the manager's egress policy refused the model
	// endpoint's address (the message names the rule and the address); a
	// re-send would be refused again, so the run ends at once.
	ReasonEgressDenied = "EgressDenied"
	// ReasonModelAnswerTooLarge: the model endpoint's answer passed the
	// manager's bound on a model answer; the run ends rather than read on.
	ReasonModelAnswerTooLarge = "ModelAnswerTooLarge"
	// ReasonModelRedirected: the model endpoint answered with a redirect,
	// which is never followed; model.baseURL should be the final address.
	ReasonModelRedirected = "ModelRedirected"
	// ReasonModelCertificateUntrusted: the model endpoint's TLS
	// certificate is not trusted (with model.caBundleSecretRef, not signed
	// by one of its CAs); a re-send would meet it again, so the run ends.
	ReasonModelCertificateUntrusted = "ModelCertificateUntrusted"
	// ReasonModelRateLimited (Ready=False while Running): the run's model
	// request waits for the provider's rate limit (a 429 and its
	// Retry-After) or the Agent's model.rateLimit; the message says until
	// when. The run keeps its claim; nothing failed.
	ReasonModelRateLimited = "ModelRateLimited"
	// ReasonModelMaxTokens: the model stopped at its max_tokens before
	// finishing its answer (Anthropic stop_reason max_tokens); the run ends
	// rather than act on half an answer. Raise model.maxCompletionTokens.
	ReasonModelMaxTokens = "ModelMaxTokens"
	// ReasonModelRefused: the model refused to answer (stop_reason refusal).
	ReasonModelRefused = "ModelRefused"
	// ReasonInvalidConfiguration: the Agent (or the run's spec against it)
	// is invalid in a way admission cannot see (the message says what);
	// the run starts no IO until it is fixed.
	ReasonInvalidConfiguration = "InvalidConfiguration"
	// ReasonSpecChanged: the run's spec changed after it was created
	// (metadata.generation above 1) — a cluster without the admission
	// policy that refuses it (config/policy). Admission authorized what
	// the run does when it was created, so it starts no IO; delete it and
	// create a new run.
	ReasonSpecChanged = "SpecChanged"
)

// Reasons of an Agent's Ready condition and of its status.tools[].reason
// (the Agent controller's checks; docs/tools.md, "Is my Agent ready?").
// Ready=False takes the reason of the first failing check — the Agent's
// own configuration, the model's, then each tool's in spec order, then the
// notification sinks' — and its message lists the failures. ReasonMCPServerUnavailable,
// ReasonToolKindNotSupported and ReasonInvalidConfiguration serve Agents
// too.
const (
	// ReasonAgentReady is Ready=True's reason: every check passed.
	ReasonAgentReady = "Ready"
	// ReasonChecking is Ready=Unknown's: a check is under way (an MCP
	// server's first tools/list has not come back yet).
	ReasonChecking = "Checking"
	// ReasonSecretNotFound: a Secret the Agent names (a header's, the
	// model's API key, a sink's signing key) does not exist in its namespace.
	ReasonSecretNotFound = "SecretNotFound"
	// ReasonSecretKeyNotFound: the Secret exists but has no such key.
	ReasonSecretKeyNotFound = "SecretKeyNotFound"
	// ReasonSecretNotReadable: the manager may not read the Secret (its
	// RBAC does not reach the namespace) — runs cannot either.
	ReasonSecretNotReadable = "SecretNotReadable"
	// ReasonTooManySecrets: the Agent names more distinct Secrets than
	// one check reads (MaxAgentSecretReads); the rest are not checked.
	ReasonTooManySecrets = "TooManySecrets"
	// ReasonMCPToolNotFound: the MCP server answers tools/list but does
	// not offer a tool the Agent names (or, for an import of every tool,
	// offers none it can use).
	ReasonMCPToolNotFound = "MCPToolNotFound"
	// ReasonInvalidSchema: a tool's parameters (or the input schema its
	// MCP server lists) do not compile with the validator runs use.
	ReasonInvalidSchema = "InvalidSchema"
	// ReasonDelegateNotFound: an agent tool names an Agent that does not
	// exist in the namespace.
	ReasonDelegateNotFound = "DelegateNotFound"
)

// MaxAgentSecretReads bounds the distinct Secrets one check of an Agent
// reads (each a GET past the cache: the manager never watches Secrets).
const MaxAgentSecretReads = 32

// Reasons of a decision that was not applied (ApprovalDecision
// status.reason, with phase Rejected) and of the engine's refusals.
const (
	// ReasonConflict: the decision contradicts one already applied (another
	// decision for the same approval or call won).
	ReasonConflict = "Conflict"
	// ReasonStaleFence: the write was made under a claim that is no
	// longer the run's (another process owns the run now).
	ReasonStaleFence = "StaleFence"
	// ReasonNotPending: the approval or call the decision names is not
	// waiting any more (decided, expired, asked again or ended).
	ReasonNotPending = "NotPending"
	// ReasonForbidden: RBAC (a SubjectAccessReview) refused the decider.
	ReasonForbidden = "Forbidden"
	// ReasonNotAnApprover: the decider is not in the rule's policy.approvers.
	ReasonNotAnApprover = "NotAnApprover"
	// ReasonSelfApproval: the decider requested the run, and the rule
	// forbids self-approval (or the requester is not known for certain).
	ReasonSelfApproval = "SelfApproval"
	// ReasonNeverADecider: the actor is an identity that never decides on
	// the run — the run's own ServiceAccount or the manager's identity.
	ReasonNeverADecider = "NeverADecider"
)

// Reasons of the journal's entries (a call's outcome, a condition).
const (
	// ReasonUnknownTool: the model called a tool the Agent does not have;
	// the model is told, nothing runs.
	ReasonUnknownTool = "UnknownTool"
	// ReasonInvalidArguments: the model's arguments do not match the
	// tool's schema; the model is told, nothing runs.
	ReasonInvalidArguments = "InvalidArguments"
	// ReasonMCPInputRefused: an MCP server asked for input exagent cannot
	// turn into a question for a person (sampling, a schema outside MCP's
	// subset, too many rounds); the call fails and the model is told.
	ReasonMCPInputRefused = "MCPInputRefused"
	// ReasonToolUnavailable prefixes the outcome of a call to an mcp tool
	// the server no longer offers (or offers with a schema the validator
	// refuses).
	ReasonToolUnavailable = "ToolUnavailable"
	// ReasonApproved: the pending call was approved.
	ReasonApproved = "Approved"
	// ReasonResolved: an Uncertain call was resolved by a person.
	ReasonResolved = "Resolved"
	// ReasonReleased: the owner handed the run back at its stop.
	ReasonReleased = "Released"
	// ReasonRecovered: another process took over the run of an owner
	// whose lease lapsed.
	ReasonRecovered = "Recovered"
)

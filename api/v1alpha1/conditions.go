package v1alpha1

// Condition types of AgentRun. The names are fixed: `kubectl wait
// --for=condition=AwaitingApproval` and tests outside the project use them.
const (
	ConditionReady            = "Ready"
	ConditionAwaitingApproval = "AwaitingApproval"
	ConditionUncertain        = "Uncertain"
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
	ReasonPending              = "ApprovalPending"
	ReasonOutcomeUncertain     = "OutcomeUncertain"
	ReasonInvalidContinuation  = "InvalidContinuation"
	ReasonModelError           = "ModelError"
	// ReasonModelRequestRetriesExhausted: the answer to one step's model
	// request was lost (owner crashed, lost its lease, stopped) more often
	// than the bound allows; each re-send was charged.
	ReasonModelRequestRetriesExhausted = "ModelRequestRetriesExhausted"
	// ReasonCorruptStatus: the stored status contradicts itself (an approval
	// naming a missing call, an unknown state, a duplicate id, …); no
	// transition writes that, so the run ends Failed rather than guess.
	ReasonCorruptStatus = "CorruptStatus"
	// ReasonMCPServerUnavailable: the tools/list of an mcp tool's server
	// could not be read (unreachable, refused the credentials, not an MCP
	// server); no new IO starts until it answers, since no call can be
	// validated or bound without its schemas.
	ReasonMCPServerUnavailable = "MCPServerUnavailable"
)

// Well-known labels and annotations.
const (
	// LabelParentRun is set on a child run to its parent's name.
	LabelParentRun = "exagent.io/parent-run"
)

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

package loop

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/canonical"
)

// Defaults of the run's timing fields (docs/architecture.md §2).
const (
	DefaultApprovalTimeout = 24 * time.Hour
	DefaultLeaseDuration   = 30 * time.Second
	// DefaultSizeBudget bounds the encoded status (etcd refuses objects over 1.5 MiB).
	DefaultSizeBudget = 1 << 20
)

// EnvInput is the trusted, current configuration a transition is evaluated
// against. The controller builds it from the current Agent and the run's
// spec at every reconcile; it never comes from bytes stored in the run.
type EnvInput struct {
	RunUID  string
	RunName string
	// RunNamespace is the run's namespace: a WaitFor call waits on objects
	// there only (wait_object.go). Empty when unknown (a check of an Agent
	// alone): the controller then holds a call to the run's namespace.
	RunNamespace string
	// Ancestry is the parent chain of run UIDs, root first (empty for a root run).
	Ancestry        []string
	Agent           *exagentv1.AgentSpec
	AgentGeneration int64
	Run             *exagentv1.AgentRunSpec
	// SizeBudget is the most bytes the encoded status may take; 0 means DefaultSizeBudget.
	// Values Seal moves into segments count as their refs.
	SizeBudget int
	// ValueBytes is the size past which Seal moves a value into a segment
	// (SealConfig.ValueBytes); 0 means DefaultValueBytes.
	ValueBytes int
	// MaxTranscriptBytes is the manager's cap on any run's transcript
	// (--max-transcript-bytes): the run's limit is the lower of it and the
	// Agent's limits.maxTranscriptBytes (or its default); 0 means no cap
	// beyond the Agent's.
	MaxTranscriptBytes int64
	// MCP holds, by the name of each Agent tool of kind mcp, what its
	// server's tools/list said. A tool without a listing contributes no
	// callable tool (its named tools fail as unavailable): the controller
	// supplies listings wherever calls are admitted or begun.
	MCP map[string]*MCPListing
	// ChildLimits holds, by Agent name, the limits of the Agents the
	// Agent's delegation tools hand work to, as read now: a child's
	// reservation is at most its own Agent's limits (reserve.go). An Agent
	// missing from it sets no limits of its own.
	ChildLimits map[string]exagentv1.LimitsSpec
	// Limits are the limits the run journaled at its first claim
	// (status.limits; nil before it): they only narrow what the Agent
	// says now (limits.go). Every transition that gates on a limit also
	// narrows by the status it is given, so a caller that leaves this
	// unset never widens a run.
	Limits *exagentv1.RunLimits
	// WaitsRefused, when set, is why the run may not begin a wait now (the
	// manager's cap on waiting runs per namespace): a waiting call fails
	// with it, the model is told, nothing waits (wait.go).
	WaitsRefused string
	// Callbacks makes the URLs of NewCallback calls (wait_callback.go);
	// nil when the manager serves no callback listener: NewCallback is
	// then a failed call saying so.
	Callbacks *CallbackIssuer
}

// Env is a validated EnvInput: the compiled policy, fingerprints, tool
// definitions and parsed durations. It is immutable and safe to share.
type Env struct {
	in      EnvInput
	policy  *Policy
	binding exagentv1.Binding
	tools   []ToolDef
	// toolHashes holds each tool's fingerprint (schema and effect), the
	// part of a payload hash that says what the call does.
	toolHashes map[string]string
	// argSchemas holds each tool's compiled parameters schema.
	argSchemas map[string]*ArgSchema
	// specs holds, by model-visible name, the spec a call runs with; an
	// mcp import resolves to one spec per imported tool.
	specs map[string]*exagentv1.ToolSpec
	// annotations holds what policy sees as tool.annotations.
	annotations map[string]map[string]any
	// unavailable holds, by visible name, why an mcp tool the Agent names
	// cannot be called now (the server does not offer it).
	unavailable map[string]string

	approvalTimeout time.Duration
	approvalNever   bool
	activeLimit     time.Duration
	activeNever     bool
	lease           time.Duration
	budget          int
	// held are the limits the run journaled (status.limits), nil when
	// none: limits() and the active-time limit are the stricter of them
	// and the current ones (limits.go).
	held *exagentv1.RunLimits
	// pricing is the Agent's model.pricing, parsed (nil: none): each model
	// response is charged at it when recorded (cost.go).
	pricing *Pricing
	// budgetHold, when set, holds the run before its next step's model
	// request (WithBudgetHold).
	budgetHold string
}

// NewEnv validates the configuration, compiles the policy and computes the
// fingerprints. An error means the configuration is invalid: no transition
// can be evaluated against it.
func NewEnv(in EnvInput) (*Env, error) {
	if in.RunUID == "" {
		return nil, fmt.Errorf("env: run UID is required")
	}
	if in.Agent == nil || in.Run == nil {
		return nil, fmt.Errorf("env: agent and run specs are required")
	}
	e := &Env{in: in, toolHashes: map[string]string{}, argSchemas: map[string]*ArgSchema{}, budget: in.SizeBudget,
		specs: map[string]*exagentv1.ToolSpec{}, annotations: map[string]map[string]any{}, unavailable: map[string]string{}}
	e.in.Agent = in.Agent.DeepCopy()
	e.in.Run = in.Run.DeepCopy()
	e.in.Ancestry = append([]string(nil), in.Ancestry...)
	if in.ChildLimits != nil {
		e.in.ChildLimits = make(map[string]exagentv1.LimitsSpec, len(in.ChildLimits))
		for k, v := range in.ChildLimits {
			e.in.ChildLimits[k] = *v.DeepCopy()
		}
	}
	if d := in.Run.Delegation; len(e.in.Ancestry) == 0 && d != nil {
		e.in.Ancestry = append(e.in.Ancestry, d.Ancestry...) // the chain of delegating calls (delegate.go)
	}
	if e.budget <= 0 {
		e.budget = DefaultSizeBudget
	}
	var err error
	if e.policy, err = CompilePolicy(in.Agent.Policy); err != nil {
		return nil, fmt.Errorf("env: %w", err)
	}
	if e.approvalTimeout, e.approvalNever, err = in.Run.ApprovalTimeout.Parse(DefaultApprovalTimeout); err != nil {
		return nil, fmt.Errorf("env: approvalTimeout: %w", err)
	}
	if e.activeLimit, e.activeNever, err = activeTimeLimit(in.Run.ActiveTimeLimit, in.Agent.Limits.ActiveTime); err != nil {
		return nil, fmt.Errorf("env: %w", err)
	}
	lease, never, err := in.Run.LeaseDuration.Parse(DefaultLeaseDuration)
	if err != nil || never || lease <= 0 {
		return nil, fmt.Errorf("env: leaseDuration %q must be a positive duration (%v)", in.Run.LeaseDuration, err)
	}
	e.lease = lease
	if e.pricing, err = ParsePricing(in.Agent.Model.Pricing); err != nil {
		return nil, fmt.Errorf("env: %w", err)
	}
	if err := e.fingerprint(); err != nil {
		return nil, fmt.Errorf("env: %w", err)
	}
	return e.holding(in.Limits), nil
}

// activeTimeLimit combines the run's activeTimeLimit with the Agent's
// limits.activeTime: the template bounds every run, so the stricter one
// wins; an unset run field takes the Agent's value. With neither set there
// is no active-time limit (maxSteps, maxToolCalls and maxTokens still
// bound the run): a finite limit is a hard cap that even a crash cannot
// overrun, so a claim reserves the whole balance and a dead owner's
// reservation is charged whole (docs/architecture.md §4.7) — a cost a user opts into by
// setting a limit, not one every crash of an unconfigured run should pay.
func activeTimeLimit(run, agent exagentv1.Duration) (time.Duration, bool, error) {
	a, aNever, err := agent.Parse(0)
	if err != nil {
		return 0, false, fmt.Errorf("limits.activeTime: %w", err)
	}
	agentSet := agent.IsSet() && !aNever
	if !run.IsSet() {
		if agent.IsSet() {
			return a, aNever, nil
		}
		return 0, true, nil
	}
	r, rNever, err := run.Parse(0)
	if err != nil {
		return 0, false, fmt.Errorf("activeTimeLimit: %w", err)
	}
	switch {
	case rNever && agentSet:
		return a, false, nil
	case rNever:
		return 0, true, nil
	case agentSet && a < r:
		return a, false, nil
	}
	return r, false, nil
}

func (e *Env) fingerprint() error {
	ag := e.in.Agent
	type toolDesc struct {
		Name        string `json:"name"`
		Kind        string `json:"kind"`
		Description string `json:"description"`
	}
	def := struct {
		Instructions string     `json:"instructions"`
		Tools        []toolDesc `json:"tools"`
	}{Instructions: ag.Instructions, Tools: []toolDesc{}}
	b := exagentv1.Binding{AgentGeneration: e.in.AgentGeneration}
	for i := range ag.Tools {
		t := &ag.Tools[i]
		def.Tools = append(def.Tools, toolDesc{Name: t.Name, Kind: t.Kind(), Description: t.Description})
		if t.MCP != nil {
			h, err := e.fingerprintMCP(t)
			if err != nil {
				return fmt.Errorf("tools[%d] %q: %w", i, t.Name, err)
			}
			b.Tools = append(b.Tools, exagentv1.ToolFingerprint{Name: t.Name, Hash: h})
			continue
		}
		// Compiled here, once per Env, so that a schema the validator cannot
		// use is an invalid Agent before any call, not a surprise at one.
		canon, sch, err := toolParameters(t)
		if err != nil {
			return fmt.Errorf("tools[%d] %q parameters: %w", i, t.Name, err)
		}
		e.argSchemas[t.Name] = sch
		h, err := canonical.HashOf(map[string]any{"name": t.Name, "parameters": json.RawMessage(canon), "effect": effectOf(t)})
		if err != nil {
			return fmt.Errorf("tools[%d] %q: %w", i, t.Name, err)
		}
		e.toolHashes[t.Name] = h
		e.specs[t.Name] = t
		b.Tools = append(b.Tools, exagentv1.ToolFingerprint{Name: t.Name, Hash: h})
		e.tools = append(e.tools, ToolDef{Name: t.Name, Description: t.Description, Parameters: canon})
	}
	var err error
	if b.Definition, err = canonical.HashOf(def); err != nil {
		return fmt.Errorf("definition fingerprint: %w", err)
	}
	model := map[string]any{
		"provider": ag.Model.Provider, "name": ag.Model.Name,
		"baseURL": ag.Model.BaseURL, "script": ag.Model.Script,
	}
	// Header names and the CA bundle's reference say where and as whom the
	// model is asked; their values (Secrets) never enter a fingerprint.
	// Added only when set, so a model without them fingerprints as before
	// the fields existed.
	if hs := ag.Model.Headers; len(hs) > 0 {
		names := make([]string, 0, len(hs))
		for _, h := range hs {
			names = append(names, strings.ToLower(h.Name)) // header names are case-insensitive
		}
		slices.Sort(names)
		model["headers"] = names
	}
	if ca := ag.Model.CABundleSecretRef; ca != nil {
		model["caBundleSecretRef"] = *ca
	}
	if r := ag.Model.Region; r != "" {
		model["region"] = r // Bedrock: another region is another endpoint
	}
	if b.Model, err = canonical.HashOf(model); err != nil {
		return fmt.Errorf("model fingerprint: %w", err)
	}
	pol := *ag.Policy.DeepCopy()
	pol.Default, pol.OnDeny = pol.DefaultAction(), pol.OnDenyAction()
	if pol.OnExpire == exagentv1.OnExpireStop {
		// Unset and Stop are one policy, fingerprinted as before the field
		// existed: a run paused before it does not ask again.
		pol.OnExpire = ""
	}
	if b.Policy, err = canonical.HashOf(pol); err != nil {
		return fmt.Errorf("policy fingerprint: %w", err)
	}
	e.binding = b
	return nil
}

// toolParameters is the canonical parameters schema of a tool that is not
// of kind mcp (an agent tool's default when it declares none, {} for the
// others), compiled by the validator every call's arguments go through.
func toolParameters(t *exagentv1.ToolSpec) ([]byte, *ArgSchema, error) {
	params := json.RawMessage(`{}`)
	if t.Agent != nil {
		params = json.RawMessage(defaultAgentParameters) // delegate.go
	}
	if t.Builtin != nil && t.Builtin.Operation == exagentv1.BuiltinAskHuman {
		params = json.RawMessage(defaultAskParameters) // question.go
	}
	if t.Builtin != nil && t.Builtin.Operation == exagentv1.BuiltinSleep {
		params = json.RawMessage(defaultSleepParameters) // wait.go
	}
	if t.Builtin != nil && t.Builtin.Operation == exagentv1.BuiltinWaitFor {
		params = json.RawMessage(defaultWaitForParameters) // wait_object.go
	}
	if t.Builtin != nil && t.Builtin.Operation == exagentv1.BuiltinNewCallback {
		params = json.RawMessage(defaultNewCallbackParameters) // wait_callback.go
	}
	if t.Builtin != nil && t.Builtin.Operation == exagentv1.BuiltinWaitForCallback {
		params = json.RawMessage(defaultCallbackWaitParameters) // wait_callback.go
	}
	if t.Parameters != nil && len(t.Parameters.Raw) > 0 {
		params = json.RawMessage(t.Parameters.Raw)
	}
	canon, err := canonical.JSON(params)
	if err != nil {
		return nil, nil, err
	}
	sch, err := CompileArgSchema(canon)
	if err != nil {
		return nil, nil, err
	}
	return canon, sch, nil
}

// Binding returns the fingerprints of the current configuration.
func (e *Env) Binding() exagentv1.Binding { return *e.binding.DeepCopy() }

// LeaseDuration is how long a claim or renewal holds the run.
func (e *Env) LeaseDuration() time.Duration { return e.lease }

// Tools returns the tools as the model sees them, in the Agent's order.
func (e *Env) Tools() []ToolDef {
	out := make([]ToolDef, len(e.tools))
	copy(out, e.tools)
	return out
}

// Policy returns the compiled current policy.
func (e *Env) Policy() *Policy { return e.policy }

// SizeBudget is the most bytes the encoded status may take.
func (e *Env) SizeBudget() int { return e.budget }

// RunUID is the run's UID (the idempotency keys' prefix).
func (e *Env) RunUID() string { return e.in.RunUID }

// ApprovalTimeout returns the per-approval timeout; never is true for Never.
func (e *Env) ApprovalTimeout() (d time.Duration, never bool) {
	return e.approvalTimeout, e.approvalNever
}

// ActiveTimeLimit returns the active-time budget; never is true for no limit.
func (e *Env) ActiveTimeLimit() (d time.Duration, never bool) { return e.activeLimit, e.activeNever }

func (e *Env) tool(name string) *exagentv1.ToolSpec { return e.specs[name] }

// ToolSpec returns the spec a call of the model-visible tool name runs
// with (for an imported mcp tool: the import's spec narrowed to that one
// tool), or nil.
func (e *Env) ToolSpec(name string) *exagentv1.ToolSpec {
	if t := e.specs[name]; t != nil {
		return t.DeepCopy()
	}
	return nil
}

// childLimits are the limits of the child Agent named agent (ChildLimits).
func (e *Env) childLimits(agent string) exagentv1.LimitsSpec { return e.in.ChildLimits[agent] }

// standIn reports whether the Env is built from the run's spec alone, with
// an empty Agent standing in for one that is missing or unusable: it says
// nothing about the Agent's tools. (A real Agent always has a model
// provider: admission requires one.)
func (e *Env) standIn() bool { return e.in.Agent.Model.Provider == "" }

// limits are the Agent's, narrowed by what the run's ancestors left it
// and by the limits the run journaled (held): never wider than either.
func (e *Env) limits() exagentv1.LimitsSpec {
	return heldLimits(narrowLimits(e.in.Agent.Limits, e.in.Run.Delegation), e.held)
}

func (e *Env) deadline() *time.Time {
	if e.in.Run.Deadline == nil {
		return nil
	}
	t := e.in.Run.Deadline.UTC()
	return &t
}

func (e *Env) onDeny() exagentv1.OnDeny { return e.in.Agent.Policy.OnDenyAction() }

func (e *Env) onExpire() exagentv1.OnExpire { return e.in.Agent.Policy.OnExpireAction() }

// idempotencyKey is stable per call: the same key on every (re-)send.
func (e *Env) idempotencyKey(callID string) string { return e.in.RunUID + "/" + callID }

// callIdempotencyKey is the key call c is sent with: one per version of
// its arguments — runUID/callID for the model's, with an "/edit-<hash>"
// suffix for an edited version — so a re-send of the same call reuses its
// key, and an edited call never carries the key under which other
// arguments were sent (a deduplicating endpoint would answer it with the
// old call's result).
func (e *Env) callIdempotencyKey(c *exagentv1.ToolCall) string {
	key := e.idempotencyKey(c.ID)
	if c.Edit == nil || c.ArgsHash == c.Edit.ModelArgsHash {
		return key
	}
	return key + "/edit-" + strings.TrimPrefix(canonical.Short(c.ArgsHash), "sha256:")
}

// payloadHash binds what an approval covers: the tool's current
// fingerprint (its schema and its effect configuration — URL, idempotency,
// builtin operation and kinds, …, see toolEffect), the effective
// (canonical) args, the definition and policy fingerprints, and the run's
// ancestry. Any change to one of them means an approval given for the old
// hash no longer covers the call.
func (e *Env) payloadHash(tool string, canonicalArgs string) (string, error) {
	args := json.RawMessage(canonicalArgs)
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	return canonical.HashOf(map[string]any{
		"tool":            tool,
		"toolFingerprint": e.toolHashes[tool],
		"args":            args,
		"definition":      e.binding.Definition,
		"policy":          e.binding.Policy,
		"run":             e.in.RunUID,
		"ancestry":        append([]string{}, e.in.Ancestry...),
	})
}

// CheckDrift refuses to continue a run whose definition or model changed
// since it bound them: the transcript was produced under the old ones, and
// silently swapping them is what the seed forbids. Policy and schemas may
// change; they are re-evaluated at begin-effect instead.
func CheckDrift(s Status, env *Env) error {
	if s.Binding == nil {
		return invalidf("status.binding is missing")
	}
	cur := env.binding
	switch {
	case s.Binding.Definition != cur.Definition:
		return errorf(KindInvalidContinuation, exagentv1.ReasonDefinitionChanged,
			"the Agent's definition (instructions or tool inventory) changed since the run started (%s → %s)",
			canonical.Short(s.Binding.Definition), canonical.Short(cur.Definition))
	case s.Binding.Model != cur.Model:
		return errorf(KindInvalidContinuation, exagentv1.ReasonDefinitionChanged,
			"the Agent's model changed since the run started (%s → %s)", canonical.Short(s.Binding.Model), canonical.Short(cur.Model))
	}
	return nil
}

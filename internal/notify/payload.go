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

package notify

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// Data is what every notification says, whatever its format: the run, the
// event, and what a person can do about it.
type Data struct {
	Event     exagentv1.NotifyEvent `json:"event"`
	Run       RunRef                `json:"run"`
	Approval  *ApprovalData         `json:"approval,omitempty"`
	Uncertain []CallData            `json:"uncertainCalls,omitempty"`
	// Deciders says who may decide: the RBAC rule and the Agent's approvers.
	Deciders *Deciders `json:"deciders,omitempty"`
	Commands *Commands `json:"commands,omitempty"`
	// Resolve lists the commands that resolve each Uncertain call.
	Resolve []string `json:"resolve,omitempty"`
	Output  string   `json:"output,omitempty"`
	// Links point to the run's page (the manager's --ui-url-template).
	Links *Links `json:"links,omitempty"`
}

// RunRef names the run and where it is.
type RunRef struct {
	Namespace string             `json:"namespace"`
	Name      string             `json:"name"`
	UID       string             `json:"uid"`
	Agent     string             `json:"agent"`
	Phase     exagentv1.RunPhase `json:"phase"`
	Reason    string             `json:"reason,omitempty"`
	Message   string             `json:"message,omitempty"`
	// Conversation is the Conversation the run is a turn of (absent for a
	// run on its own).
	Conversation string `json:"conversation,omitempty"`
}

// ApprovalData is the approval a human is asked for.
type ApprovalData struct {
	ID          string     `json:"id"`
	CallID      string     `json:"callID"`
	Tool        string     `json:"tool"`
	Args        string     `json:"args"`
	Rule        string     `json:"rule,omitempty"`
	PayloadHash string     `json:"payloadHash"`
	Revision    int64      `json:"revision"`
	RequestedAt time.Time  `json:"requestedAt"`
	ExpiresAt   *time.Time `json:"expiresAt,omitempty"`
	// Question is what a request of kind Question asks (InputRequested,
	// and ApprovalExpiring of a question).
	Question *QuestionData `json:"question,omitempty"`
}

// QuestionData is a question's text (an excerpt: untrusted text), its
// choices and the schema an answer must match.
type QuestionData struct {
	Text string `json:"text"`
	// URL (an MCP server's URL elicitation) the person is asked to visit,
	// and its origin spelled out; the manager never fetches it.
	URL     string          `json:"url,omitempty"`
	Origin  string          `json:"origin,omitempty"`
	Choices []string        `json:"choices,omitempty"`
	Schema  json.RawMessage `json:"schema,omitempty"`
}

// CallData is a call without a confirmed outcome.
type CallData struct {
	ID   string `json:"id"`
	Tool string `json:"tool"`
	Args string `json:"args"`
}

// Deciders is who may decide on the run's approvals.
type Deciders struct {
	// RBAC is the permission a decider needs.
	RBAC            string   `json:"rbac"`
	Users           []string `json:"users,omitempty"`
	Groups          []string `json:"groups,omitempty"`
	ServiceAccounts []string `json:"serviceAccounts,omitempty"`
	// NotRequester is true when the run's requester may not decide.
	NotRequester bool `json:"notRequester,omitempty"`
}

// Build gathers the data of event e of run, with the Agent's policy (nil
// when the Agent is gone).
func Build(run *exagentv1.AgentRun, agent *exagentv1.Agent, e Event) Data {
	st := &run.Status
	d := Data{Event: e.Kind, Run: RunRef{Namespace: run.Namespace, Name: run.Name, UID: string(run.UID),
		Agent: run.Spec.AgentRef.Name, Phase: st.Phase, Reason: st.Reason, Message: Excerpt(st.Message, 1024)}}
	if ref := run.Spec.ConversationRef; ref != nil {
		d.Run.Conversation = ref.Name
	}
	switch e.Kind {
	case exagentv1.NotifyApprovalRequested, exagentv1.NotifyInputRequested, exagentv1.NotifyApprovalExpiring:
		verb := exagentv1.VerbApprove
		if a := st.Approval(e.Subject); a != nil {
			ad := &ApprovalData{ID: a.ID, CallID: a.CallID, Rule: a.Rule, PayloadHash: a.PayloadHash, Revision: a.Revision,
				RequestedAt: a.RequestedAt.UTC()}
			if a.ExpiresAt != nil {
				t := a.ExpiresAt.UTC()
				ad.ExpiresAt = &t
			}
			if c := st.Call(a.CallID); c != nil {
				ad.Tool, ad.Args = c.Tool, Excerpt(c.Args, ArgsExcerptBytes)
			}
			d.Approval = ad
			cmds := ApprovalCommands(run.Namespace, run.Name, a.ID)
			if a.IsQuestion() {
				ad.Question = &QuestionData{Text: Excerpt(a.Question.Text, ArgsExcerptBytes), Choices: a.Question.Choices}
				if len(a.Question.Schema) <= ArgsExcerptBytes && json.Valid([]byte(a.Question.Schema)) {
					ad.Question.Schema = json.RawMessage(a.Question.Schema)
				}
				cmds = AnswerCommands(run.Namespace, run.Name, a.ID)
				if a.Question.URL != "" {
					// A URL to visit: the answer is that it was done.
					cmds.Approve = strings.Replace(cmds.Approve, `--text "…"`, "--text done", 1)
					ad.Question.URL, ad.Question.Origin = a.Question.URL, exagentv1.URLOrigin(a.Question.URL)
				}
				verb = exagentv1.VerbAnswer
			}
			d.Commands = &cmds
		}
		d.Deciders = deciders(run, agent, verb)
	case exagentv1.NotifyRunUncertain:
		for _, c := range st.UncertainCalls() {
			d.Uncertain = append(d.Uncertain, CallData{ID: c.ID, Tool: c.Tool, Args: Excerpt(c.Args, ArgsExcerptBytes)})
			d.Resolve = append(d.Resolve, ResolveCommand(run.Namespace, run.Name, c.ID))
		}
		d.Deciders = deciders(run, agent, exagentv1.VerbResolve)
	case exagentv1.NotifyRunEnded:
		d.Output = Excerpt(st.Output, 1024)
	}
	return d
}

// deciders says who may decide with verb on the run's approvals.
func deciders(run *exagentv1.AgentRun, agent *exagentv1.Agent, verb string) *Deciders {
	d := &Deciders{RBAC: fmt.Sprintf(`verb %q on %s/%s named %q in namespace %q`, verb,
		exagentv1.ApprovalResource, exagentv1.ApprovalSubresource, run.Spec.AgentRef.Name, run.Namespace)}
	if agent == nil {
		return d
	}
	if ap := agent.Spec.Policy.Approvers; ap != nil {
		d.Users, d.Groups, d.ServiceAccounts = ap.Users, ap.Groups, ap.ServiceAccounts
	}
	d.NotRequester = agent.Spec.Policy.ForbidSelfApproval
	return d
}

// CloudEvent is a CloudEvents 1.0 event in structured JSON mode.
type CloudEvent struct {
	SpecVersion     string    `json:"specversion"`
	ID              string    `json:"id"`
	Source          string    `json:"source"`
	Type            string    `json:"type"`
	Subject         string    `json:"subject"`
	Time            time.Time `json:"time"`
	DataContentType string    `json:"datacontenttype"`
	Data            Data      `json:"data"`
}

// CloudEventType is the CloudEvents type of an event, reverse-DNS:
// io.exagent.run.approval-requested, … .run-ended.
func CloudEventType(e exagentv1.NotifyEvent) string {
	return "io.exagent.run." + kebab(string(e))
}

// Body renders data for a sink's format and returns it with its Content-Type.
func Body(format exagentv1.NotifyFormat, id string, at time.Time, subject string, data Data) ([]byte, string, error) {
	if format == exagentv1.NotifySlack {
		b, err := json.Marshal(slackMessage(data))
		return b, "application/json", err
	}
	ce := CloudEvent{SpecVersion: "1.0", ID: id, Type: CloudEventType(data.Event), Subject: subject, Time: at.UTC(),
		Source:          fmt.Sprintf("/apis/%s/namespaces/%s/agentruns/%s", exagentv1.GroupVersion.String(), data.Run.Namespace, data.Run.Name),
		DataContentType: "application/json", Data: data}
	b, err := json.Marshal(ce)
	return b, "application/cloudevents+json", err
}

// slack is an incoming-webhook message: text (the fallback and the
// notification) and blocks.
type slack struct {
	Text   string       `json:"text"`
	Blocks []slackBlock `json:"blocks"`
}

type slackBlock struct {
	Type     string         `json:"type"`
	Text     *slackText     `json:"text,omitempty"`
	Elements []slackElement `json:"elements,omitempty"`
}

type slackText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// slackElement is a button of an actions block.
type slackElement struct {
	Type string     `json:"type"`
	Text *slackText `json:"text"`
	URL  string     `json:"url"`
}

// linkButton is the actions block that opens the run's page.
func linkButton(l *Links) []slackBlock {
	if l == nil || l.UI == "" {
		return nil
	}
	return []slackBlock{{Type: "actions", Elements: []slackElement{{Type: "button",
		Text: &slackText{Type: "plain_text", Text: "Open the run's page"}, URL: l.UI}}}}
}

func section(md string) slackBlock {
	return slackBlock{Type: "section", Text: &slackText{Type: "mrkdwn", Text: Excerpt(md, 2900)}}
}

func slackMessage(d Data) slack {
	run := fmt.Sprintf("%s/%s", d.Run.Namespace, d.Run.Name)
	var m slack
	switch d.Event {
	case exagentv1.NotifyApprovalRequested, exagentv1.NotifyInputRequested, exagentv1.NotifyApprovalExpiring:
		verb := "waits for your approval"
		if d.Event == exagentv1.NotifyApprovalExpiring {
			verb = "approval is about to expire"
		}
		if a := d.Approval; a != nil && a.Question != nil {
			return slackQuestion(d, run)
		}
		a := d.Approval
		if a == nil {
			m.Text = fmt.Sprintf("AgentRun %s: %s", run, verb)
			m.Blocks = append([]slackBlock{section(m.Text)}, linkButton(d.Links)...)
			return m
		}
		m.Text = fmt.Sprintf("AgentRun %s %s: %s", run, verb, a.Tool)
		var b strings.Builder
		fmt.Fprintf(&b, "*AgentRun `%s`* (agent `%s`) %s.\n*Tool:* `%s`\n*Arguments:* ```%s```\n", run, d.Run.Agent, verb, a.Tool, a.Args)
		if a.ExpiresAt != nil {
			fmt.Fprintf(&b, "*Expires:* %s\n", a.ExpiresAt.Format(time.RFC3339))
		} else {
			b.WriteString("*Expires:* never\n")
		}
		if dd := d.Deciders; dd != nil {
			fmt.Fprintf(&b, "*Who may decide:* %s", dd.RBAC)
			var who []string
			for _, l := range []struct {
				what  string
				names []string
			}{{"user", dd.Users}, {"group", dd.Groups}, {"serviceAccount", dd.ServiceAccounts}} {
				for _, n := range l.names {
					who = append(who, l.what+" "+n)
				}
			}
			if len(who) > 0 {
				fmt.Fprintf(&b, ", and one of: %s", strings.Join(who, ", "))
			}
			if dd.NotRequester {
				b.WriteString(", not the run's requester")
			}
		}
		m.Blocks = []slackBlock{section(b.String())}
		if c := d.Commands; c != nil {
			m.Blocks = append(m.Blocks, section(fmt.Sprintf("```%s\n%s\n%s```", c.Show, c.Approve, c.Deny)))
		}
	case exagentv1.NotifyRunUncertain:
		m.Text = fmt.Sprintf("AgentRun %s is Uncertain: a call has no confirmed outcome", run)
		var b strings.Builder
		fmt.Fprintf(&b, "*AgentRun `%s`* (agent `%s`): %s\n", run, d.Run.Agent, d.Run.Message)
		for _, c := range d.Uncertain {
			fmt.Fprintf(&b, "• `%s` %s ```%s```\n", c.Tool, c.ID, c.Args)
		}
		m.Blocks = []slackBlock{section(b.String())}
		if len(d.Resolve) > 0 {
			m.Blocks = append(m.Blocks, section("Check the effect, then:\n```"+strings.Join(d.Resolve, "\n")+"```"))
		}
	default:
		m.Text = fmt.Sprintf("AgentRun %s ended %s", run, d.Run.Phase)
		detail := d.Run.Message
		if d.Run.Reason != "" && d.Run.Reason != string(d.Run.Phase) {
			detail = d.Run.Reason + ": " + detail
		}
		m.Blocks = []slackBlock{section(fmt.Sprintf("*AgentRun `%s`* (agent `%s`) ended *%s*. %s", run, d.Run.Agent, d.Run.Phase, detail))}
	}
	m.Blocks = append(m.Blocks, linkButton(d.Links)...)
	return m
}

// slackQuestion is the Slack message of a question: its text quoted (the
// asker's words, untrusted, in a code block), the choices and how to answer.
func slackQuestion(d Data, run string) slack {
	a := d.Approval
	verb := "waits for your answer"
	if d.Event == exagentv1.NotifyApprovalExpiring {
		verb = "question is about to expire"
	}
	var m slack
	m.Text = fmt.Sprintf("AgentRun %s %s", run, verb)
	var b strings.Builder
	fmt.Fprintf(&b, "*AgentRun `%s`* (agent `%s`) %s.\n*Question:* ```%s```\n", run, d.Run.Agent, verb, a.Question.Text)
	if len(a.Question.Choices) > 0 {
		fmt.Fprintf(&b, "*Choices:* %s\n", strings.Join(a.Question.Choices, " | "))
	}
	if a.ExpiresAt != nil {
		fmt.Fprintf(&b, "*Expires:* %s\n", a.ExpiresAt.Format(time.RFC3339))
	}
	if dd := d.Deciders; dd != nil {
		fmt.Fprintf(&b, "*Who may answer:* %s", dd.RBAC)
	}
	m.Blocks = []slackBlock{section(b.String())}
	if c := d.Commands; c != nil {
		m.Blocks = append(m.Blocks, section(fmt.Sprintf("```%s\n%s\n%s```", c.Show, c.Approve, c.Deny)))
	}
	return m
}

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

package app

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// answerFlags are the flags of `answer`: the answer as text, as fields,
// or as a document; or no answer (--decline, --cancel).
type answerFlags struct {
	Text    string
	textSet bool
	Sets    []string
	File    string
	Decline bool
	Cancel  bool
}

func newAnswerCommand(f *factory, streams genericiooptions.IOStreams) *cobra.Command {
	return newDecideCommand(f, streams, exagentv1.DecisionAnswer, &cobra.Command{
		Use:   "answer RUN [QUESTION] (--text TEXT | --set key=value … | -f FILE | --decline | --cancel)",
		Short: "Answer a question an exagent run is waiting for",
		Long: `Answer a question of an exagent AgentRun (an AskHuman tool call), as the
authenticated kubectl user. The answer must match the question's schema
(kubectl approve show prints it); admission refuses one that does not and
says where. --text gives a text answer, --set builds an object answer field
by field (key may be a.b.c; value is JSON when it parses, else a string),
-f reads a JSON or YAML document (- for stdin). --decline and --cancel
answer nothing; the model is told. Needs the "answer" verb on
agents/approval (ClusterRole exagent-approver grants it).`,
		Example: `  # The run's only question, answered with text or one of its choices
  kubectl approve answer triage-42 --text "eu-west-1"

  # An object answer, field by field, or from a file
  kubectl approve answer triage-42 --set cluster=eu --set ticket=4711
  kubectl approve answer triage-42 q-call-0-0-r1 -f answer.yaml

  # Refuse to answer, with a reason the model sees
  kubectl approve answer triage-42 --decline --reason "ask the payments team"`,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: completeRunThenApproval(f, pendingRuns),
	})
}

func (a *answerFlags) addFlags(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&a.Text, "text", "", "The answer as text (a JSON string).")
	fs.StringArrayVar(&a.Sets, "set", nil, "One field of an object answer: key=value (key may be a.b.c; value is JSON when it parses, else a string). Repeatable.")
	fs.StringVarP(&a.File, "filename", "f", "", "The answer as a JSON or YAML document (- for stdin).")
	fs.BoolVar(&a.Decline, "decline", false, "Decline to answer (the model is told; give --reason).")
	fs.BoolVar(&a.Cancel, "cancel", false, "Dismiss the question without answering (the model is told).")
}

// build turns the flags into the request's action and answer (JSON).
func (a *answerFlags) build(req *decisionRequest, stdin interface{ Read([]byte) (int, error) }) error {
	given := 0
	for _, set := range []bool{a.textSet, len(a.Sets) > 0, a.File != "", a.Decline, a.Cancel} {
		if set {
			given++
		}
	}
	switch {
	case given == 0:
		return errors.New("say the answer: --text, --set or -f (or --decline / --cancel to give none)")
	case given > 1:
		return errors.New("--text, --set, -f, --decline and --cancel exclude one another: give one")
	}
	req.Action = exagentv1.AnswerAccept
	switch {
	case a.Decline:
		req.Action = exagentv1.AnswerDecline
	case a.Cancel:
		req.Action = exagentv1.AnswerCancel
	case a.textSet:
		b, err := json.Marshal(a.Text)
		if err != nil {
			return fmt.Errorf("--text: %w", err)
		}
		req.Answer = b
	case len(a.Sets) > 0:
		obj := map[string]any{}
		for _, s := range a.Sets {
			if err := setPath(obj, s); err != nil {
				return err
			}
		}
		b, err := json.Marshal(obj)
		if err != nil {
			return fmt.Errorf("--set: %w", err)
		}
		req.Answer = b
	default:
		raw, err := readArgsFile(a.File, stdin)
		if err != nil {
			return fmt.Errorf("-f: %w", errors.Unwrap(err))
		}
		js, err := yaml.YAMLToJSON(raw)
		if err != nil {
			return fmt.Errorf("-f %s: %w", a.File, err)
		}
		if len(bytes.TrimSpace(js)) == 0 || string(bytes.TrimSpace(js)) == "null" {
			return fmt.Errorf("-f %s: the document is empty", a.File)
		}
		req.Answer = js
	}
	if len(req.Answer) > exagentv1.MaxValueBytes {
		return fmt.Errorf("the answer takes %d bytes, more than %d", len(req.Answer), exagentv1.MaxValueBytes)
	}
	return nil
}

// chooseQuestion is the pending question named id, or the run's only one.
func chooseQuestion(run *exagentv1.AgentRun, id string) (*exagentv1.Approval, error) {
	if id != "" {
		a, err := pendingApprovalNamed(run, id)
		if err != nil {
			return nil, err
		}
		if !a.IsQuestion() {
			return nil, fmt.Errorf("%s of run %q asks for a yes or no, not an answer: kubectl approve %s %s, or kubectl approve deny",
				a.ID, run.Name, run.Name, a.ID)
		}
		return a, nil
	}
	var questions []exagentv1.Approval
	for _, a := range run.Status.Pending() {
		if a.IsQuestion() {
			questions = append(questions, a)
		}
	}
	switch len(questions) {
	case 0:
		return nil, fmt.Errorf("run %q has no pending questions (phase %s)", run.Name, orNone(string(run.Status.Phase)))
	case 1:
		return &questions[0], nil
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "run %q has %d pending questions; name one (kubectl approve answer %s QUESTION …):", run.Name, len(questions), run.Name)
	for _, q := range questions {
		fmt.Fprintf(&b, "\n  %s: %s", q.ID, q.Question.Text)
	}
	return nil, errors.New(b.String())
}

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
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/cmd/kubectl-approve/app/ui"
)

// uiDecide is the page's Decider: the deciding verbs' own steps — read
// the run, plan the decision, ask RBAC first (prepareDecisions), create,
// wait for the operator — with the client of the person the page serves. The decision
// is bound to what the page showed (req.Seen), not to this read: a run
// that holds another call now is refused before anything is created, and
// the decision carries the page's run UID, revision and payload hash, so
// admission and the controller refuse it if the run changes after this
// read too.
func uiDecide(ctx context.Context, c client.Client, req ui.DecideRequest) (*exagentv1.ApprovalDecision, error) {
	request := decisionRequest{Kind: req.Kind, ApprovalID: req.ApprovalID, CallID: req.CallID,
		Outcome: req.Outcome, Evidence: req.Evidence, Reason: req.Reason, Action: req.Action, Answer: req.Answer}
	decisions, err := prepareDecisions(ctx, c, req.Namespace, req.Run, request, time.Now(), true)
	if err != nil {
		return nil, err
	}
	if len(decisions) != 1 {
		return nil, errors.New("the page decides one approval or call at a time")
	}
	d := decisions[0]
	if err := bindSeen(d, req.Seen); err != nil {
		return nil, err
	}
	if err := createDecision(ctx, c, d, dryRunNone); err != nil {
		return nil, err
	}
	timeout := defaultDecisionTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = time.Until(dl)
	}
	decided, err := waitForDecision(ctx, c, d, timeout)
	if err != nil {
		return nil, err
	}
	if decided.Status.Phase == exagentv1.DecisionRejected {
		return decided, rejectedError(decided)
	}
	return decided, nil
}

// bindSeen refuses d, planned on the run as read now, when that run is not
// the one the page showed (another UID: deleted and re-created under the
// same name; another revision or payload hash: the call was edited, or
// the run paused again), and binds d to what was shown otherwise.
func bindSeen(d *exagentv1.ApprovalDecision, seen ui.Seen) error {
	now := ui.Seen{RunUID: d.Spec.RunUID, Revision: d.Spec.Revision, PayloadHash: d.Spec.PayloadHash}
	if now != seen {
		return fmt.Errorf("%w (the page showed run uid %s, revision %d, payload hash %s; the run holds uid %s, revision %d, payload hash %s)",
			ui.ErrCallChanged, seen.RunUID, seen.Revision, seen.PayloadHash, now.RunUID, now.Revision, now.PayloadHash)
	}
	d.Spec.RunUID, d.Spec.Revision, d.Spec.PayloadHash = seen.RunUID, seen.Revision, seen.PayloadHash
	return nil
}

// uiExplain is FormatError without kubectl's "error: " prefix: the page
// shows the sentence itself.
func uiExplain(err error) string {
	return strings.TrimPrefix(FormatError(err), "error: ")
}

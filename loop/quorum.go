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
	"strings"
	"time"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
	"github.com/exagent-io/exagent/internal/canonical"
)

// vote counts one Approve under a's quorum and reports whether the quorum
// is met. A person votes once (by username and UID); every vote is on one
// version of the call and journals it (votes[].payloadHash): only the
// first vote may edit the call and so set that version (a.Edit); an edit
// after votes were cast is refused (editAfterVotes), as is a vote with
// other arguments than the edit (editedBefore). A decision admitted
// before another vote landed meets that refusal here, inside the
// compare-and-swap, so the order in which decisions are applied cannot
// carry a yes over to arguments its voter did not see. Separation of
// duties was checked for this voter in prepare, as for every decision.
func vote(a *exagentv1.Approval, edit *exagentv1.ApprovalEdit, dec *decision, now time.Time) (bool, error) {
	actor := dec.cmd.Actor
	if err := alreadyVoted(a, &actor); err != nil {
		return false, err
	}
	if len(a.Votes) >= maxQuorum {
		return false, conflictf("approval %s already holds %d votes", a.ID, len(a.Votes))
	}
	if err := checkVoteVersion(a, edit); err != nil {
		return false, err
	}
	if edit != nil && a.Edit == nil {
		a.Edit = edit
	}
	scope := dec.cmd.Scope
	if scope == "" {
		scope = exagentv1.ScopeCall
	}
	a.Votes = append(a.Votes, exagentv1.Vote{Actor: actor, OperationID: dec.cmd.OperationID, At: secTime(now), Scope: scope,
		PayloadHash: a.CurrentPayloadHash()})
	return quorumMissing(a) == "", nil
}

// checkVoteVersion refuses a vote under a quorum that would change the
// version of the call the earlier votes are on: an edit once votes were
// cast, or arguments other than the edit every vote is on.
func checkVoteVersion(a *exagentv1.Approval, edit *exagentv1.ApprovalEdit) error {
	switch {
	case edit == nil:
		return nil
	case a.Edit != nil && a.Edit.ArgsHash != edit.ArgsHash:
		return editedBefore(a)
	case a.Edit == nil && len(a.Votes) > 0:
		return editAfterVotes(a)
	}
	return nil
}

// editAfterVotes refuses an edit of a call some approvers already voted
// for as it stands: their votes cannot count for arguments they never
// saw, and one person must not choose alone what a quorum lets through.
func editAfterVotes(a *exagentv1.Approval) error {
	names := make([]string, len(a.Votes))
	for i := range a.Votes {
		names[i] = actorString(&a.Votes[i].Actor)
	}
	return conflictf("approval %s already has %d %s on the call as proposed (payloadHash %s, by %s): under a quorum only the first vote may edit the call, "+
		"so an edit now would count their votes for arguments they never saw; vote for the call as it is (without --set/--args-file), "+
		"or deny it and let the model propose the call again", a.ID, len(a.Votes), plural(len(a.Votes), "vote", "votes"),
		canonical.Short(a.CurrentPayloadHash()), strings.Join(names, ", "))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// alreadyVoted refuses a second vote by the same person under a quorum.
func alreadyVoted(a *exagentv1.Approval, actor *exagentv1.Actor) error {
	for i := range a.Votes {
		if v := &a.Votes[i]; sameActor(&v.Actor, actor) {
			return conflictf("%s already voted on approval %s (operation %s): a quorum counts distinct approvers, "+
				"so another person must approve", actorString(actor), a.ID, v.OperationID)
		}
	}
	return nil
}

// editedBefore refuses a vote with other arguments than the edit every
// vote under a quorum is on.
func editedBefore(a *exagentv1.Approval) error {
	return conflictf("the call of approval %s was already edited by %s (payloadHash %s): every vote must be on that version; "+
		"vote without arguments to approve it, or deny it", a.ID, actorString(&a.Edit.Editor), canonical.Short(a.Edit.PayloadHash))
}

func sameActor(a, b *exagentv1.Actor) bool { return a.Username == b.Username && a.UID == b.UID }

// quorumMissing says what a's quorum still needs ("" when it is met).
func quorumMissing(a *exagentv1.Approval) string { return a.QuorumMissing() }

// quorumScope is Run only when every vote chose Run: one person cannot
// make a quorum rule's approval cover the rest of the run.
func quorumScope(a *exagentv1.Approval) exagentv1.DecisionScope {
	for i := range a.Votes {
		if a.Votes[i].Scope != exagentv1.ScopeRun {
			return exagentv1.ScopeCall
		}
	}
	return exagentv1.ScopeRun
}

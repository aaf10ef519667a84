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

package ui

// The decision cards — an approval or a question waiting for a person,
// and a call whose outcome nobody knows — are one template each
// (parts.html: "pending", "uncertain"), shown by the run page and by a
// conversation's thread alike: the same fields, the same binding (Seen:
// run UID, revision, payload hash), posted to the same handler (decide).
// A card on a thread also says which conversation to go back to.

// card is a pending approval or question with what its form needs.
type card struct {
	inboxRow
	CSRF string
	Form formState
	// Anchor is the card's element id: "approval-ID" on a run page; on a
	// thread, where several turns may use one approval ID, the turn's
	// number goes first.
	Anchor string
	// Back, on a thread, is the conversation the decision returns to
	// (the form's field conversation).
	Back string
}

// Typed tells whether the form's typed values are this card's (what the
// person wrote before a refusal goes back into the card they wrote it in).
func (c card) Typed() bool { return c.Form.Run == c.Run && c.Form.Approval == c.ApprovalID }

// resolveCard is a call with an unknown outcome and what its form needs:
// a Resolve binds the run's revision and the call's payload hash.
type resolveCard struct {
	callView
	Namespace, Run, RunUID string
	Revision               int64
	CSRF                   string
	Form                   formState
	Anchor                 string
	Back                   string
}

// Typed is card.Typed for a call.
func (c resolveCard) Typed() bool { return c.Form.Run == c.Run && c.Form.Call == c.ID }

// cardFuncs build the cards in templates (a template passes one value to
// another: these make that value).
var cardFuncs = map[string]any{
	"card": func(r inboxRow, csrf string, f formState, anchor, back string) card {
		return card{inboxRow: r, CSRF: csrf, Form: f, Anchor: anchor, Back: back}
	},
	"resolveCard": func(c callView, ns, run, uid string, revision int64, csrf string, f formState, anchor, back string) resolveCard {
		return resolveCard{callView: c, Namespace: ns, Run: run, RunUID: uid, Revision: revision, CSRF: csrf, Form: f,
			Anchor: anchor, Back: back}
	},
}

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

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/exagent-io/exagent/cmd/kubectl-approve/app/turn"
)

// say adds the reply box's turn to the conversation, as the person: the
// same AgentRun `kubectl approve say` creates (turn.Add), created with
// the request's own client, so admission stamps the person as its
// requester and applies the conversation's followUps, doubleText and
// maxTurns. Accepted, it redirects to the thread, which reads the turn
// back; refused — by the page's own check, RBAC or admission — the
// thread is rendered as it is now with the apiserver's words on top and
// the text as typed. The guard (authed: origin, CSRF, body bound) has
// already passed.
func (s *Server) say(q *request) {
	ns, name := q.r.PathValue("namespace"), q.r.PathValue("name")
	f := q.r.PostForm
	reply := replyState{Text: f.Get("text"), Participant: f.Get("participant")}
	refused := func(code int, text string) {
		s.renderThread(q, code, ns, name, &flash{Kind: "error", Text: text}, formState{}, reply)
	}
	uid := f.Get("conversationUID")
	if uid == "" {
		// A form that does not say which conversation it showed (an old
		// page, a hand-made POST) might continue another one: nothing is sent.
		refused(http.StatusConflict, turn.ErrConversationChanged.Error())
		return
	}
	if strings.TrimSpace(reply.Text) == "" {
		refused(http.StatusUnprocessableEntity, "Write what to say: the text is the new turn's input.")
		return
	}
	ctx, cancel := context.WithTimeout(q.r.Context(), s.cfg.DecisionTimeout)
	defer cancel()
	run, _, err := turn.Add(ctx, q.c, turn.Request{Namespace: ns, Conversation: name, Participant: reply.Participant,
		Text: reply.Text, ConversationUID: types.UID(uid)})
	if err != nil {
		s.cfg.Log.Info("turn refused", "conversation", ns+"/"+name, "error", err.Error())
		refused(sayStatus(err), "Refused: "+s.cfg.explain(err))
		return
	}
	http.Redirect(q.w, q.r, threadURL(ns, name, run.Name, url.Values{"said": {run.Name}}), http.StatusSeeOther)
}

// sayStatus is the HTTP status of a refused turn: the apiserver's meaning
// kept (403 RBAC or followUps, 422 admission's other refusals, 404 no
// such conversation), 409 for a conversation re-created since, 422 for
// the page's own checks.
func sayStatus(err error) int {
	switch {
	case errors.Is(err, turn.ErrConversationChanged):
		return http.StatusConflict
	case apierrors.IsForbidden(err):
		return http.StatusForbidden
	case apierrors.IsInvalid(err):
		return http.StatusUnprocessableEntity
	case apierrors.IsNotFound(err), errors.Is(err, turn.ErrNotFound):
		return http.StatusNotFound
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return http.StatusBadGateway
	}
	return http.StatusUnprocessableEntity
}

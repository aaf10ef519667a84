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

package callbacks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/exagent-io/exagent/loop"
)

// Prefix is the path the handler serves under.
const Prefix = "/callbacks/"

// ErrNoRun is what a Deliverer returns when the namespace holds no run of
// that UID.
var ErrNoRun = errors.New("no such run")

// ErrBusy is what a Deliverer returns when the run kept changing under
// it: the caller may retry.
var ErrBusy = errors.New("the run is busy")

// Tokens checks a callback URL's token (authz.Signer).
type Tokens interface {
	VerifyCallbackToken(runUID, id, token string) (expiresAt time.Time, ok bool)
}

// Deliverer applies a POST's body to callback id of the run of namespace
// and UID. Its errors are ErrNoRun, ErrBusy, a *loop.CallbackError, or a
// failure of the cluster.
type Deliverer interface {
	Deliver(ctx context.Context, namespace, runUID, id string, body []byte) error
}

// Handler serves POST /callbacks/NAMESPACE/RUN-UID/ID?token=TOKEN.
type Handler struct {
	Tokens Tokens
	Runs   Deliverer
	// Clock tells an expired token (the real clock when nil).
	Clock clock.PassiveClock
	// MaxBody bounds a body (loop.MaxCallbackBody when 0).
	MaxBody int64
	Log     logr.Logger
}

// ServeHTTP answers one POST.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	ns, uid, id, ok := parsePath(r.URL.Path)
	if !ok {
		http.Error(w, "want /callbacks/NAMESPACE/RUN-UID/ID?token=TOKEN", http.StatusNotFound)
		return
	}
	// The token first: nothing about the run is read, nor told, before it.
	expires, ok := h.Tokens.VerifyCallbackToken(uid, id, r.URL.Query().Get("token"))
	if !ok {
		http.Error(w, "the token is not valid for this URL", http.StatusUnauthorized)
		return
	}
	if !h.now().Before(expires) {
		http.Error(w, fmt.Sprintf("the callback URL expired at %s", expires.Format(time.RFC3339)), http.StatusGone)
		return
	}
	limit := h.MaxBody
	if limit <= 0 {
		limit = loop.MaxCallbackBody
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			http.Error(w, fmt.Sprintf("the body is larger than %d bytes", limit), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "reading the body failed", http.StatusBadRequest)
		return
	}
	err = h.Runs.Deliver(r.Context(), ns, uid, id, body)
	code, msg := answer(err)
	if code >= http.StatusInternalServerError {
		h.Log.Error(err, "delivering a callback", "namespace", ns, "runUID", uid, "callback", id)
	} else {
		h.Log.V(1).Info("callback answered", "namespace", ns, "runUID", uid, "callback", id, "code", code)
	}
	if code == http.StatusAccepted {
		w.WriteHeader(code)
		return
	}
	http.Error(w, msg, code)
}

// answer is the status code and message of a delivery's outcome.
func answer(err error) (int, string) {
	if err == nil {
		return http.StatusAccepted, ""
	}
	if ce, ok := loop.AsCallbackError(err); ok {
		switch ce.Refusal {
		case loop.CallbackUnknown, loop.CallbackRunEnded:
			return http.StatusNotFound, ce.Msg
		case loop.CallbackExpired:
			return http.StatusGone, ce.Msg
		case loop.CallbackReceived:
			return http.StatusConflict, ce.Msg
		case loop.CallbackInvalid:
			return http.StatusBadRequest, ce.Msg
		case loop.CallbackTooLarge:
			return http.StatusRequestEntityTooLarge, ce.Msg
		}
	}
	switch {
	case errors.Is(err, ErrNoRun):
		return http.StatusNotFound, "no such run"
	case errors.Is(err, ErrBusy):
		return http.StatusServiceUnavailable, "the run is busy; retry"
	}
	return http.StatusServiceUnavailable, "the callback could not be recorded now; retry"
}

func (h *Handler) now() time.Time {
	if h.Clock == nil {
		return time.Now()
	}
	return h.Clock.Now()
}

// parsePath splits /callbacks/NS/UID/ID; each part bounded (a namespace
// is at most 63 bytes, a UID 36, an id 64) and non-empty.
func parsePath(p string) (ns, uid, id string, ok bool) {
	rest, found := strings.CutPrefix(p, Prefix)
	if !found {
		return "", "", "", false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 {
		return "", "", "", false
	}
	ns, uid, id = parts[0], parts[1], parts[2]
	if ns == "" || uid == "" || id == "" || len(ns) > 63 || len(uid) > 64 || len(id) > 64 {
		return "", "", "", false
	}
	return ns, uid, id, true
}

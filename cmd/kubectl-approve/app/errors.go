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
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// deniedMarker separates the apiserver's "admission webhook "x" denied the
// request" preamble from the webhook's own message, which is what a person
// needs to read.
const deniedMarker = "denied the request: "

// FormatError renders err the way kubectl does: "error: …" for the plugin's
// own errors and for admission denials (whose message is already written for
// people), "Error from server (Reason): …" for other API errors. Never a Go
// stack or raw JSON.
func FormatError(err error) string {
	if err == nil {
		return ""
	}
	var multi multiError
	if errors.As(err, &multi) {
		lines := make([]string, 0, len(multi))
		for _, e := range multi {
			lines = append(lines, FormatError(e))
		}
		return strings.Join(lines, "\n")
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		s := status.Status()
		msg := strings.TrimSpace(s.Message)
		if i := strings.Index(msg, deniedMarker); i >= 0 {
			return "error: " + stripForbidden(strings.TrimSpace(msg[i+len(deniedMarker):]))
		}
		if s.Reason == metav1.StatusReasonForbidden {
			// A webhook may also answer with a Status of its own.
			if reason := stripForbidden(msg); reason != msg && !strings.HasPrefix(reason, `User "`) {
				return "error: " + reason
			}
		}
		if msg == "" {
			msg = err.Error()
		}
		reason := s.Reason
		if reason == "" || reason == metav1.StatusReasonUnknown {
			return "Error from server: " + msg
		}
		return fmt.Sprintf("Error from server (%s): %s", reason, msg)
	}
	return "error: " + err.Error()
}

// forbiddenPrefix is apierrors.NewForbidden's `<resource> "<name>" is
// forbidden: ` — the object's name, which the apiserver generated from the
// plugin's generateName, is noise to the person who ran the command.
var forbiddenPrefix = regexp.MustCompile(`^[a-z0-9.-]+( "[^"]*")? is forbidden: `)

func stripForbidden(msg string) string {
	return strings.TrimSpace(forbiddenPrefix.ReplaceAllString(msg, ""))
}

// PrintError writes FormatError(err) and a newline to w.
func PrintError(w io.Writer, err error) {
	_, _ = fmt.Fprintln(w, FormatError(err))
}

// multiError is several independent failures (one per approval with --all),
// each shown on its own line.
type multiError []error

func (m multiError) Error() string {
	parts := make([]string, 0, len(m))
	for _, e := range m {
		parts = append(parts, e.Error())
	}
	return strings.Join(parts, "; ")
}

// errNotInstalled is what a cluster without the exagent CRDs gives.
var errNotInstalled = errors.New("the exagent.io/v1beta1 API is not served by this cluster: install the CRDs (make deploy, or see docs/install.md)")

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

package authz

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"time"
)

// callbackPurpose prefixes what a callback token's HMAC covers: the key
// also signs decisions, runs' requesters and setters, and the prefix (a
// NUL ends it; no JSON document starts with it) keeps a callback token
// from ever being a valid signature of anything else, or the reverse.
const callbackPurpose = "exagent.io/callback-token/v1\x00"

// maxCallbackToken bounds a token the verifier looks at.
const maxCallbackToken = 128

// CallbackToken is the token of callback id of run runUID, valid until
// expiresAt (whole seconds): "<unix expiry>.<base64url HMAC-SHA256>". The
// expiry is in clear so the listener can tell an expired URL (410) from a
// forged one (401) without reading the run; the HMAC binds it.
func (s *Signer) CallbackToken(runUID, id string, expiresAt time.Time) string {
	exp := strconv.FormatInt(expiresAt.Unix(), 10)
	return exp + "." + base64.RawURLEncoding.EncodeToString(s.callbackMAC(runUID, id, exp))
}

// VerifyCallbackToken checks token against run runUID and callback id in
// constant time, and returns the expiry it carries; ok is false for a
// token this key did not make for them. It does not check the expiry.
func (s *Signer) VerifyCallbackToken(runUID, id, token string) (expiresAt time.Time, ok bool) {
	if len(token) > maxCallbackToken {
		return time.Time{}, false
	}
	exp, sig, found := strings.Cut(token, ".")
	if !found {
		return time.Time{}, false
	}
	unix, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || unix <= 0 || strconv.FormatInt(unix, 10) != exp {
		return time.Time{}, false
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return time.Time{}, false
	}
	if !hmac.Equal(got, s.callbackMAC(runUID, id, exp)) {
		return time.Time{}, false
	}
	return time.Unix(unix, 0).UTC(), true
}

func (s *Signer) callbackMAC(runUID, id, exp string) []byte {
	m := hmac.New(sha256.New, s.key)
	// NUL-separated: neither a UID, an id nor a decimal holds one, so no two
	// triples make the same bytes.
	m.Write([]byte(callbackPurpose + runUID + "\x00" + id + "\x00" + exp))
	return m.Sum(nil)
}

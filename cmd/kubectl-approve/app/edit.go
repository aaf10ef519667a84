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
	"fmt"
	"io"
	"os"
	"strings"

	"sigs.k8s.io/yaml"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// editedArguments builds the arguments an Approve carries when the user
// edits the call: the --args-file document (JSON or YAML, an object) or,
// without one, the version of the call the approval stands for now (the
// edited one under a quorum, else the model's), then each --set applied in
// order. The operator checks the result against the tool's schema and the
// policy; this only builds it.
func editedArguments(run *exagentv1.AgentRun, a *exagentv1.Approval, req decisionRequest) ([]byte, error) {
	var args map[string]any
	switch {
	case req.ArgsFile != nil:
		js, err := yaml.YAMLToJSON(req.ArgsFile)
		if err != nil {
			return nil, fmt.Errorf("--args-file: %w", err)
		}
		if err := decodeObject(js, &args); err != nil {
			return nil, fmt.Errorf("--args-file: %w", err)
		}
	default:
		base := ""
		if a.Edit != nil && a.Edit.Args != "" {
			base = a.Edit.Args
		} else if c := run.Status.Call(a.CallID); c != nil {
			if c.Args == "" && c.ArgsRef != nil {
				return nil, fmt.Errorf("the arguments of call %s are sealed in a segment the plugin could not read; pass the whole edited call with --args-file", c.ID)
			}
			base = c.Args
		}
		if base == "" {
			base = "{}"
		}
		if err := decodeObject([]byte(base), &args); err != nil {
			return nil, fmt.Errorf("the call's arguments: %w", err)
		}
	}
	for _, s := range req.Sets {
		if err := setPath(args, s); err != nil {
			return nil, err
		}
	}
	return json.Marshal(args)
}

func decodeObject(js []byte, into *map[string]any) error {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber() // 12345678901234567890 stays exact
	if err := dec.Decode(into); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if *into == nil {
		return fmt.Errorf("must be an object (the call's arguments)")
	}
	return nil
}

// setPath applies one --set key=value: key is a dot-separated path into
// the arguments (objects are created along it), value is JSON when it
// parses as JSON (3, true, null, "x", [1,2], {"a":1}), else a string.
func setPath(args map[string]any, kv string) error {
	key, raw, ok := strings.Cut(kv, "=")
	if !ok || key == "" {
		return fmt.Errorf("--set %q: want key=value (key may be a.b.c)", kv)
	}
	var value any = raw
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err == nil && !dec.More() {
		value = v
	}
	parts := strings.Split(key, ".")
	m := args
	for i, p := range parts {
		if p == "" {
			return fmt.Errorf("--set %q: empty key segment", kv)
		}
		if i == len(parts)-1 {
			m[p] = value
			return nil
		}
		next, ok := m[p].(map[string]any)
		if !ok {
			if _, exists := m[p]; exists {
				return fmt.Errorf("--set %q: %s is not an object", kv, strings.Join(parts[:i+1], "."))
			}
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	return nil
}

// maxArgsFile bounds what --args-file reads: a call's arguments are at
// most exagentv1.MaxValueBytes; YAML may spell them longer.
const maxArgsFile = 4 * exagentv1.MaxValueBytes

// readArgsFile reads --args-file (- for stdin), bounded.
func readArgsFile(path string, stdin io.Reader) ([]byte, error) {
	r := stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("--args-file: %w", err)
		}
		defer func() { _ = f.Close() }()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxArgsFile+1))
	if err != nil {
		return nil, fmt.Errorf("--args-file: %w", err)
	}
	if len(b) > maxArgsFile {
		return nil, fmt.Errorf("--args-file: larger than %d bytes", maxArgsFile)
	}
	return b, nil
}

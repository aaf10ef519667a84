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

package chart

import (
	"fmt"
	"os"
	"testing"

	"github.com/exagent-io/exagent/internal/testing/testenv"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if err := control.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// control is started by the first test that needs an apiserver (the drift
// check does not), with no CRD: the chart's install brings its own.
var control = &testenv.Lazy{Options: testenv.Options{WithoutCRDs: true}}

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

package v1alpha1

import (
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/conversion"
	"sigs.k8s.io/randfill"

	"github.com/exagent-io/exagent/api/v1beta1"
)

// fuzzRounds is how many random objects of each kind make each round trip.
const fuzzRounds = 500

// kinds makes a fresh v1alpha1 object of each kind and its v1beta1 hub.
var kinds = map[string]func() (conversion.Convertible, conversion.Hub){
	"Agent":    func() (conversion.Convertible, conversion.Hub) { return &Agent{}, &v1beta1.Agent{} },
	"AgentRun": func() (conversion.Convertible, conversion.Hub) { return &AgentRun{}, &v1beta1.AgentRun{} },
	"ApprovalDecision": func() (conversion.Convertible, conversion.Hub) {
		return &ApprovalDecision{}, &v1beta1.ApprovalDecision{}
	},
	"AgentRunSegment": func() (conversion.Convertible, conversion.Hub) { return &AgentRunSegment{}, &v1beta1.AgentRunSegment{} },
	"Conversation":    func() (conversion.Convertible, conversion.Hub) { return &Conversation{}, &v1beta1.Conversation{} },
	"AgentSchedule":   func() (conversion.Convertible, conversion.Hub) { return &AgentSchedule{}, &v1beta1.AgentSchedule{} },
	"AgentTrigger":    func() (conversion.Convertible, conversion.Hub) { return &AgentTrigger{}, &v1beta1.AgentTrigger{} },
	"AgentBudget":     func() (conversion.Convertible, conversion.Hub) { return &AgentBudget{}, &v1beta1.AgentBudget{} },
}

// filler fills every field, nested lists and maps included, with
// deterministic random values (the seed is logged by the failing case).
func filler(seed uint64) *randfill.Filler {
	return randfill.NewWithSeed(int64(seed)).NilChance(0.1).NumElements(1, 3).MaxDepth(12).Funcs(
		// A Time survives conversion to the second, as it survives JSON.
		func(t *metav1.Time, c randfill.Continue) {
			*t = metav1.Unix(c.Int63n(1<<33), 0)
		},
		// apiVersion and kind are the webhook's to set, not conversion's.
		func(tm *metav1.TypeMeta, _ randfill.Continue) { *tm = metav1.TypeMeta{} },
		// Raw JSON is opaque to conversion; any bytes do.
		func(r *runtime.RawExtension, c randfill.Continue) {
			r.Raw = []byte(`{"k":"` + c.String(8) + `"}`)
		},
	)
}

// TestRoundTripFromV1alpha1 fills each v1alpha1 kind at random, converts it
// to v1beta1 and back, and wants it unchanged: a manifest written for
// v1alpha1 loses nothing by being stored as v1beta1 (issue 42).
func TestRoundTripFromV1alpha1(t *testing.T) {
	for name, k := range kinds {
		t.Run(name, func(t *testing.T) {
			for i := range fuzzRounds {
				seed := rand.Uint64()
				in, hub := k()
				filler(seed).Fill(in)
				if err := in.ConvertTo(hub); err != nil {
					t.Fatalf("seed %d: to v1beta1: %v", seed, err)
				}
				out, _ := k()
				if err := out.ConvertFrom(hub); err != nil {
					t.Fatalf("seed %d: from v1beta1: %v", seed, err)
				}
				if !apiequality.Semantic.DeepEqual(in, out) {
					t.Fatalf("round %d, seed %d: v1alpha1 → v1beta1 → v1alpha1 changed the object (-in +out):\n%s", i, seed, cmp.Diff(in, out))
				}
			}
		})
	}
}

// TestRoundTripFromV1beta1 is the other way: what the manager stores, read
// by a v1alpha1 client and written back, is what it stored.
func TestRoundTripFromV1beta1(t *testing.T) {
	for name, k := range kinds {
		t.Run(name, func(t *testing.T) {
			for i := range fuzzRounds {
				seed := rand.Uint64()
				spoke, in := k()
				filler(seed).Fill(in)
				if err := spoke.ConvertFrom(in); err != nil {
					t.Fatalf("seed %d: from v1beta1: %v", seed, err)
				}
				_, out := k()
				if err := spoke.ConvertTo(out); err != nil {
					t.Fatalf("seed %d: to v1beta1: %v", seed, err)
				}
				if !apiequality.Semantic.DeepEqual(in, out) {
					t.Fatalf("round %d, seed %d: v1beta1 → v1alpha1 → v1beta1 changed the object (-in +out):\n%s", i, seed, cmp.Diff(in, out))
				}
			}
		})
	}
}

// TestConvertRefusesAForeignHub: a hub of another kind is an error naming
// both types, never a panic in the webhook.
func TestConvertRefusesAForeignHub(t *testing.T) {
	if err := (&Agent{}).ConvertTo(&v1beta1.AgentRun{}); err == nil {
		t.Fatal("an Agent converted into an AgentRun")
	}
	if err := (&AgentRun{}).ConvertFrom(&v1beta1.Agent{}); err == nil {
		t.Fatal("an AgentRun converted from an Agent")
	}
}

// TestSchemeConvertsBothWays: the scheme the manager serves the conversion
// webhook from knows the generated functions (AddToScheme registers them).
func TestSchemeConvertsBothWays(t *testing.T) {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := v1beta1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	in := &AgentRun{Spec: AgentRunSpec{AgentRef: LocalObjectReference{Name: "a"}, Input: "hi"}}
	in.Status.FormatVersion = 2
	out := &v1beta1.AgentRun{}
	if err := s.Convert(in, out, nil); err != nil {
		t.Fatal(err)
	}
	if out.Spec.AgentRef.Name != "a" || out.Spec.Input != "hi" || out.Status.FormatVersion != 2 {
		t.Fatalf("converted %+v", out)
	}
}

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

package retention

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// TestSameTurns: before a conversation is deleted its turns are listed
// again past the cache; a turn it owns that was not read (created since)
// or was written since means looking again — but an object that carries
// the conversation's label and owner and names no such conversation (its
// metadata edited by its author) does not: looking again would find it
// again, forever.
func TestSameTurns(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := exagentv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	conv := &exagentv1.Conversation{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "conv-uid"}}
	owner := exagentv1.ConversationOwnerReference(conv)
	run := func(name string, ref bool) *exagentv1.AgentRun {
		r := &exagentv1.AgentRun{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name),
			Labels: map[string]string{exagentv1.LabelConversation: exagentv1.LabelValue("c")}, OwnerReferences: []metav1.OwnerReference{owner}}}
		if ref {
			r.Spec.ConversationRef = &exagentv1.ConversationRef{Name: "c"}
		}
		return r
	}
	read := func(c client.Client, names ...string) []exagentv1.AgentRun {
		var out []exagentv1.AgentRun
		for _, n := range names {
			r := &exagentv1.AgentRun{}
			if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: n}, r); err != nil {
				t.Fatal(err)
			}
			out = append(out, *r)
		}
		return out
	}
	tests := map[string]struct {
		objects []client.Object
		read    []string
		edit    string // written after it was read
		changed bool
	}{
		"as read":                                {objects: []client.Object{run("t1", true), run("t2", true)}, read: []string{"t1", "t2"}},
		"a turn created since":                   {objects: []client.Object{run("t1", true), run("t2", true)}, read: []string{"t1"}, changed: true},
		"a turn written since":                   {objects: []client.Object{run("t1", true), run("t2", true)}, read: []string{"t1", "t2"}, edit: "t2", changed: true},
		"labelled and owned, but naming nothing": {objects: []client.Object{run("t1", true), run("x9", false)}, read: []string{"t1"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.objects...).Build()
			turns := read(c, tc.read...)
			if tc.edit != "" {
				r := read(c, tc.edit)[0]
				r.Annotations = map[string]string{"edited": "yes"}
				if err := c.Update(context.Background(), &r); err != nil {
					t.Fatal(err)
				}
			}
			err := (&Reaper{reader: c}).sameTurns(context.Background(), conv, turns)
			if got := errors.Is(err, errRunChanged); got != tc.changed || (err != nil && !got) {
				t.Errorf("sameTurns = %v, want looking again %v", err, tc.changed)
			}
		})
	}
}

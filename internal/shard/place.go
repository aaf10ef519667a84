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

package shard

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// Keys place the roots of the work. Every object of one tree of work has
// the same key, so they all land on one shard and one manager sees the
// whole: a run and its children (the root run's key), a conversation and
// its turns, a schedule or a trigger and the runs it starts. The kind
// prefix keeps a run and a conversation of one name apart.
const (
	kindRun          = "AgentRun/"
	kindConversation = "Conversation/"
	kindSchedule     = "AgentSchedule/"
	kindTrigger      = "AgentTrigger/"
	kindAgent        = "Agent/"
)

// ConversationKey is the key of a Conversation and of its turns.
func ConversationKey(name string) string { return kindConversation + name }

// ScheduleKey is the key of an AgentSchedule and of the runs it starts.
func ScheduleKey(name string) string { return kindSchedule + name }

// TriggerKey is the key of an AgentTrigger and of the runs it starts.
func TriggerKey(name string) string { return kindTrigger + name }

// AgentKey is the key of an Agent (its status has one writer).
func AgentKey(name string) string { return kindAgent + name }

// RootKey is the key of a run that is not a child (a child's is its
// root's, RunKey): its conversation's, its schedule's or trigger's when
// one of those owns it, otherwise its own.
func RootKey(run *exagentv1.AgentRun) string {
	if ref := run.Spec.ConversationRef; ref != nil && ref.Name != "" {
		return ConversationKey(ref.Name)
	}
	for _, o := range run.OwnerReferences {
		if o.APIVersion != exagentv1.GroupVersion.String() && o.APIVersion != "exagent.io/v1alpha1" {
			continue
		}
		switch o.Kind {
		case "AgentSchedule":
			return ScheduleKey(o.Name)
		case "AgentTrigger":
			return TriggerKey(o.Name)
		}
	}
	return kindRun + run.Name
}

// Placement is where an object belongs, and why.
type Placement struct {
	// Shard is the shard ("" when no shard is configured).
	Shard string
	// Pinned: the namespace's exagent.io/shard label chose it.
	Pinned bool
	// Whole: the namespace is held whole on one shard because it has
	// AgentBudgets, whose spend counts every run of the namespace.
	Whole bool
}

// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// Placer says where objects belong: a Namespace's exagent.io/shard label
// pins all of it; a namespace with AgentBudgets is held whole on the
// shard its name hashes to (a budget's spend and gate count every run of
// the namespace, so one manager must see them all); otherwise each tree
// of work goes to the shard its key hashes to (Set.Assign).
type Placer struct {
	// Shards are hashed over; a nil Placer or an empty Set places nothing.
	Shards Set
	// Reader reads Namespaces' labels and lists AgentBudgets (the
	// manager's cache: every manager caches both whole).
	Reader client.Reader
}

// Enabled reports whether runs are placed at all.
func (p *Placer) Enabled() bool { return p != nil && !p.Shards.Empty() }

// Place is where an object of namespace with key belongs.
func (p *Placer) Place(ctx context.Context, namespace, key string) (Placement, error) {
	if !p.Enabled() {
		return Placement{}, nil
	}
	pin, err := p.pin(ctx, namespace)
	if err != nil {
		return Placement{}, err
	}
	if pin != "" {
		return Placement{Shard: pin, Pinned: true}, nil
	}
	whole, err := p.hasBudgets(ctx, namespace)
	if err != nil {
		return Placement{}, err
	}
	if whole {
		return Placement{Shard: p.Shards.Assign(namespace, ""), Whole: true}, nil
	}
	return Placement{Shard: p.Shards.Assign(namespace, key)}, nil
}

// pin is the namespace's exagent.io/shard label when it is a valid shard
// name; a pin to a shard outside --shards is honoured (a dedicated shard
// for one tenant need not take part in the hash), and the webhook warns.
func (p *Placer) pin(ctx context.Context, namespace string) (string, error) {
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := p.Reader.Get(ctx, types.NamespacedName{Name: namespace}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		return "", fmt.Errorf("reading the labels of namespace %s: %w", namespace, err)
	}
	v := ns.Labels[exagentv1.LabelShard]
	if CheckName(v) != nil {
		return "", nil
	}
	return v, nil
}

func (p *Placer) hasBudgets(ctx context.Context, namespace string) (bool, error) {
	var budgets exagentv1.AgentBudgetList
	if err := p.Reader.List(ctx, &budgets, client.InNamespace(namespace)); err != nil {
		return false, fmt.Errorf("listing the AgentBudgets of namespace %s: %w", namespace, err)
	}
	return len(budgets.Items) > 0, nil
}

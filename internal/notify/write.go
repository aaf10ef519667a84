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

package notify

import (
	"context"
	"errors"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// StatusWriter writes a run's status with compare-and-swap. It is the
// controllers' one store layer (Store.Commit) seen through the one method
// the Deliverer needs, so this package never imports the controllers.
type StatusWriter interface {
	// WriteStatus writes next as run's status if run is still the version
	// stored. It returns an error wrapping ErrConflict when run is not (the
	// Deliverer re-reads and merges), and an *UnstorableError when the
	// apiserver refuses the status itself (the same write can only be
	// refused again).
	WriteStatus(ctx context.Context, run *exagentv1.AgentRun, next exagentv1.AgentRunStatus, now time.Time) error
}

// ErrConflict means the run changed since it was read (the write lost
// its compare-and-swap).
var ErrConflict = errors.New("write conflict")

// UnstorableError is a status the apiserver refuses (invalid, too large).
type UnstorableError struct {
	// Reason is the PascalCase reason (exagentv1.ReasonStatusTooLarge, …).
	Reason string
	Err    error
}

func (e *UnstorableError) Error() string { return e.Err.Error() }
func (e *UnstorableError) Unwrap() error { return e.Err }

// conflictRetries bounds the re-reads after conflicts of one journal write;
// then the run is queued again (work).
const conflictRetries = 3

// journal writes the records of next with CAS. A conflict re-reads the
// run and carries this process's records over onto the newer status, so
// what was delivered is never forgotten by a write that lost the race.
func (d *Deliverer) journal(ctx context.Context, run *exagentv1.AgentRun, next *exagentv1.AgentRunStatus, now time.Time) error {
	for attempt := 0; ; attempt++ {
		err := d.c.Writer.WriteStatus(ctx, run, *next, now)
		var u *UnstorableError
		if errors.As(err, &u) {
			// Retrying the same write would re-send every delivery it
			// journals each time: the run's next change brings it back.
			logf.FromContext(ctx).Error(u, "notification journal not written: the apiserver refuses the run's status", "run", run.Name)
			d.event(run, "the notification journal could not be written (%s): %s", u.Reason, Excerpt(u.Error(), 800))
			return nil
		}
		if err == nil || !errors.Is(err, ErrConflict) || attempt >= conflictRetries {
			return err
		}
		fresh := &exagentv1.AgentRun{}
		if err := d.c.Reader.Get(ctx, client.ObjectKeyFromObject(run), fresh); err != nil {
			return err
		}
		merged := fresh.Status.DeepCopy()
		mergeRecords(merged, next)
		run, next = fresh, merged
	}
}

// mergeRecords puts ours onto st: a record still Pending in st takes our
// progress; one we added is appended; settled ones in st stay; what we
// marked journaled on an approval stays marked.
func mergeRecords(st *exagentv1.AgentRunStatus, ours *exagentv1.AgentRunStatus) {
	for _, a := range ours.Approvals {
		if have := st.Approval(a.ID); have != nil {
			for _, e := range a.Notified {
				if !Notified(have, e) {
					have.Notified = append(have.Notified, e)
				}
			}
		}
	}
	for _, r := range ours.Notifications {
		if have := Find(st, r.ID, r.Sink); have != nil {
			if have.State == exagentv1.NotificationPending {
				*have = r
			}
			continue
		}
		st.Notifications = append(st.Notifications, r)
	}
	Supersede(st, nil, false)
}

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

package main

import (
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/exagent-io/exagent/controllers"
)

// addTriggerEvents adds the watcher of the kubernetesEvents triggers'
// Events to mgr. It runs whenever the controllers do, whether or not the
// trigger listener is on (those triggers take no deliveries), on the
// leader only, and reads Events as each trigger's ServiceAccount.
// It shares the controllers' trigger handler (so its counts reach the
// trigger's status) and tells the trigger's Ready controller when a
// watch's problems change.
func addTriggerEvents(mgr manager.Manager, c *controllers.Controllers) error {
	es := &controllers.EventSources{
		Cache: mgr.GetCache(), Client: mgr.GetClient(), Config: mgr.GetConfig(), Lookup: c.TriggerRuns,
		Handler: c.Triggers, Log: ctrl.Log.WithName("trigger-events"), Changed: c.TriggerStatus.Wake,
		Owner: c.Owner,
	}
	c.TriggerStatus.Events = es
	return mgr.Add(es)
}

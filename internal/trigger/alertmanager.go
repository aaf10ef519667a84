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

package trigger

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"
)

// Alertmanager's webhook payload, version 4
// (https://prometheus.io/docs/alerting/latest/configuration/#webhook_config).
type alertmanagerPayload struct {
	Version           string            `json:"version"`
	GroupKey          string            `json:"groupKey"`
	Status            string            `json:"status"`
	Receiver          string            `json:"receiver"`
	GroupLabels       map[string]string `json:"groupLabels"`
	CommonLabels      map[string]string `json:"commonLabels"`
	CommonAnnotations map[string]string `json:"commonAnnotations"`
	ExternalURL       string            `json:"externalURL"`
	Alerts            []Alert           `json:"alerts"`
}

// Alert is one alert of an Alertmanager notification.
type Alert struct {
	Status       string            `json:"status"`
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL"`
	Fingerprint  string            `json:"fingerprint"`
}

// maxAlerts bounds the alerts one notification may carry (Alertmanager
// sends a group's alerts together; max_alerts in its config caps them).
const maxAlerts = 1000

// Alerts parses an Alertmanager notification (version 4) and returns its
// alerts whose status is firing — and the resolved ones too when
// resolved is set — one per fingerprint, in fingerprint order. A payload
// of another version, or an alert without a fingerprint, is refused (400).
func Alerts(body []byte, resolved bool) ([]Alert, error) {
	var p alertmanagerPayload
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, fmt.Errorf("not an Alertmanager notification: %w", err)
	}
	if p.Version != "4" {
		return nil, fmt.Errorf("an Alertmanager notification of version %q: version 4 is understood", p.Version)
	}
	if len(p.Alerts) > maxAlerts {
		return nil, fmt.Errorf("%d alerts in one notification: at most %d (set max_alerts in the receiver)", len(p.Alerts), maxAlerts)
	}
	seen := map[string]bool{}
	var out []Alert
	for i, a := range p.Alerts {
		if a.Fingerprint == "" {
			return nil, fmt.Errorf("alerts[%d] has no fingerprint", i)
		}
		wanted := a.Status == "firing" || resolved && a.Status == "resolved"
		if seen[a.Fingerprint] || !wanted {
			continue
		}
		seen[a.Fingerprint] = true
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Fingerprint < out[j].Fingerprint })
	return out, nil
}

// Event is the CEL view of an alert: the variables an AgentTrigger's
// input and dedupKey expressions read.
func (a Alert) Event() map[string]any {
	return map[string]any{
		"status": a.Status, "labels": a.Labels, "annotations": a.Annotations, "fingerprint": a.Fingerprint,
		"startsAt": a.StartsAt.UTC().Format(time.RFC3339), "generatorURL": a.GeneratorURL,
	}
}

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

package webhook

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	exagentv1 "github.com/exagent-io/exagent/api/v1beta1"
)

// validateNotify checks an Agent's notify sinks: unique DNS-label names,
// http(s) URLs under the same rules as http tools (a host, no credentials
// in the URL), a known format and events, and a well-formed signing Secret
// reference.
func validateNotify(path *field.Path, sinks []exagentv1.NotifySink) field.ErrorList {
	var errs field.ErrorList
	if len(sinks) > exagentv1.MaxNotifySinks {
		errs = append(errs, field.TooMany(path, len(sinks), exagentv1.MaxNotifySinks))
	}
	seen := map[string]bool{}
	for i := range sinks {
		s := &sinks[i]
		p := path.Index(i)
		if s.Name != "" && seen[s.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), s.Name))
		}
		seen[s.Name] = true
		errs = append(errs, validateSink(p, s)...)
		switch s.Format {
		case "", exagentv1.NotifyCloudEvents, exagentv1.NotifySlack:
		default:
			errs = append(errs, field.NotSupported(p.Child("format"), s.Format, []string{string(exagentv1.NotifyCloudEvents), string(exagentv1.NotifySlack)}))
		}
		for j, e := range s.Events {
			known := false
			for _, k := range exagentv1.NotifyEvents {
				known = known || e == k
			}
			if !known {
				names := make([]string, len(exagentv1.NotifyEvents))
				for k, x := range exagentv1.NotifyEvents {
					names[k] = string(x)
				}
				errs = append(errs, field.NotSupported(p.Child("events").Index(j), e, names))
			}
		}
	}
	return errs
}

// validateSink checks what every sink needs: a DNS-label name, an http(s)
// URL with a host and no credentials, a well-formed signing Secret
// reference.
func validateSink(p *field.Path, s *exagentv1.NotifySink) field.ErrorList {
	var errs field.ErrorList
	switch msgs := validation.IsDNS1123Label(s.Name); {
	case s.Name == "":
		errs = append(errs, field.Required(p.Child("name"), "name the sink (it keys the runs' delivery journal)"))
	case len(msgs) > 0:
		for _, m := range msgs {
			errs = append(errs, field.Invalid(p.Child("name"), s.Name, m))
		}
	}
	errs = append(errs, validateHTTPURL(p.Child("url"), s.URL, true)...)
	if s.SigningSecretRef != nil {
		errs = append(errs, validateSecretKeySelector(p.Child("signingSecretRef"), *s.SigningSecretRef)...)
	}
	return errs
}

// validateRetention checks an Agent's retention (the schema's markers
// and CEL rules say the same; the webhook still refuses them when an older
// CRD is installed): a TTL and keepLast within their bounds, and an
// archive sink shaped like a notify sink that sends the one CloudEvent it
// can (no Slack format, no events).
func validateRetention(path *field.Path, r *exagentv1.RetentionSpec) field.ErrorList {
	var errs field.ErrorList
	if ttl := r.TTLSecondsAfterFinished; ttl != nil && *ttl < 0 {
		errs = append(errs, field.Invalid(path.Child("ttlSecondsAfterFinished"), *ttl,
			"seconds an ended run is kept: 0 deletes it as soon as it ended; leave it unset to keep runs"))
	}
	if k := r.KeepLast; k != nil && (*k < 0 || *k > exagentv1.MaxKeepLast) {
		errs = append(errs, field.Invalid(path.Child("keepLast"), *k,
			fmt.Sprintf("how many ended runs of the Agent are kept: 0 to %d; leave it unset for no history limit", exagentv1.MaxKeepLast)))
	}
	a := r.Archive
	if a == nil {
		return errs
	}
	p := path.Child("archive")
	errs = append(errs, validateSink(p, a)...)
	if a.Format != "" && a.Format != exagentv1.NotifyCloudEvents {
		errs = append(errs, field.NotSupported(p.Child("format"), a.Format, []string{string(exagentv1.NotifyCloudEvents)}))
	}
	if len(a.Events) > 0 {
		errs = append(errs, field.Forbidden(p.Child("events"), "the archive is one event, "+exagentv1.CloudEventArchived+": leave events empty"))
	}
	return errs
}

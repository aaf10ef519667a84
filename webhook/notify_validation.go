package webhook

import (
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	exagentv1 "github.com/exagent-io/exagent/api/v1alpha1"
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
		switch msgs := validation.IsDNS1123Label(s.Name); {
		case s.Name == "":
			errs = append(errs, field.Required(p.Child("name"), "name the sink (it keys the runs' delivery journal)"))
		case len(msgs) > 0:
			for _, m := range msgs {
				errs = append(errs, field.Invalid(p.Child("name"), s.Name, m))
			}
		case seen[s.Name]:
			errs = append(errs, field.Duplicate(p.Child("name"), s.Name))
		}
		seen[s.Name] = true
		errs = append(errs, validateHTTPURL(p.Child("url"), s.URL, true)...)
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
		if s.SigningSecretRef != nil {
			errs = append(errs, validateSecretKeySelector(p.Child("signingSecretRef"), *s.SigningSecretRef)...)
		}
	}
	return errs
}

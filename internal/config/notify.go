package config

import (
	"fmt"
	"net/url"
	"slices"

	"github.com/parley-dev/parley/internal/notify"
)

// Notify is one [[notify]] table: where to push notices for people.
type Notify struct {
	// Name names the endpoint in logs (default: the URL's host).
	Name string `toml:"name,omitempty"`
	// URL is an http or https URL: a webhook, or an ntfy topic such as
	// https://ntfy.sh/my-team-alerts.
	URL string `toml:"url"`
	// Format is "webhook" (default: the notice as JSON) or "ntfy" (the
	// text, with Title, Priority and Tags headers).
	Format string `toml:"format,omitempty"`
	// On lists the kinds to send: permission, ack_overdue, agent_error,
	// agent_stalled, critical, held (default: all).
	On []string `toml:"on,omitempty"`
	// Headers go with every request (e.g. Authorization).
	Headers map[string]string `toml:"headers,omitempty"`
}

func validateNotify(ns []Notify) error {
	for i, n := range ns {
		where := fmt.Sprintf("notify[%d]", i)
		if n.Name != "" {
			where = fmt.Sprintf("notify %q", n.Name)
		}
		u, err := url.Parse(n.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%s: url must be an http or https URL", where)
		}
		if n.Format != "" && n.Format != notify.Webhook && n.Format != notify.Ntfy {
			return fmt.Errorf("%s: invalid format %q: want webhook or ntfy", where, n.Format)
		}
		for _, k := range n.On {
			if !slices.Contains(notify.Kinds, notify.Kind(k)) {
				return fmt.Errorf("%s: unknown kind %q in on: want some of %v", where, k, notify.Kinds)
			}
		}
	}
	return nil
}

// NotifyEndpoints converts the [[notify]] tables for the notifier.
func NotifyEndpoints(ns []Notify) []notify.Endpoint {
	var out []notify.Endpoint
	for _, n := range ns {
		e := notify.Endpoint{Name: n.Name, URL: n.URL, Format: n.Format, Headers: n.Headers}
		for _, k := range n.On {
			e.Kinds = append(e.Kinds, notify.Kind(k))
		}
		out = append(out, e)
	}
	return out
}

package config

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
)

// Upstream is one [[upstream]] table: an MCP server the daemon's gateway keeps
// a session with and whose tools it re-exposes as {name}__{tool}. Exactly one of
// Command (a stdio server) and URL (a Streamable HTTP server) is set.
type Upstream struct {
	// Name prefixes the upstream's tools; letters, digits, '-' and single '_'.
	Name string `toml:"name"`
	// Command and Args start a stdio server; Env adds to the daemon's
	// environment, Cwd (absolute) is its working directory.
	Command string            `toml:"command,omitempty"`
	Args    []string          `toml:"args,omitempty"`
	Env     map[string]string `toml:"env,omitempty"`
	Cwd     string            `toml:"cwd,omitempty"`
	// URL is a Streamable HTTP endpoint; Headers go with every request.
	URL     string            `toml:"url,omitempty"`
	Headers map[string]string `toml:"headers,omitempty"`
	// Enabled, unset, means true.
	Enabled *bool `toml:"enabled,omitempty"`
	// Timeout bounds one tool call (default 60s).
	Timeout Duration `toml:"timeout,omitempty"`
	// Retries is how many more times a call is tried when it never reached
	// the upstream (default 2); a call that may have run is never retried.
	Retries *int `toml:"retries,omitempty"`
	// Tools filters the upstream's tools by name.
	Tools *ToolFilter `toml:"tools,omitempty"`
}

// ToolFilter selects tools with glob patterns (path.Match syntax) on the
// upstream's own tool names: a tool is exposed when it matches an Allow pattern
// (or Allow is empty) and no Deny pattern.
type ToolFilter struct {
	Allow []string `toml:"allow,omitempty"`
	Deny  []string `toml:"deny,omitempty"`
}

// Defaults of an upstream.
const (
	DefaultUpstreamTimeout = 60 * time.Second
	DefaultUpstreamRetries = 2
	maxUpstreamName        = 32
)

// IsEnabled reports whether the upstream is enabled (the default).
func (u *Upstream) IsEnabled() bool { return u.Enabled == nil || *u.Enabled }

// CallTimeout is the per-call timeout, with the default applied.
func (u *Upstream) CallTimeout() time.Duration {
	if u.Timeout <= 0 {
		return DefaultUpstreamTimeout
	}
	return time.Duration(u.Timeout)
}

// RetryCount is the number of retries, with the default applied.
func (u *Upstream) RetryCount() int {
	if u.Retries == nil {
		return DefaultUpstreamRetries
	}
	return *u.Retries
}

// Transport is "stdio" or "http".
func (u *Upstream) Transport() string {
	if u.URL != "" {
		return "http"
	}
	return "stdio"
}

// Allows reports whether the filter exposes the upstream tool named tool.
func (u *Upstream) Allows(tool string) bool {
	if u.Tools == nil {
		return true
	}
	if len(u.Tools.Allow) > 0 {
		ok := false
		for _, p := range u.Tools.Allow {
			if m, _ := path.Match(p, tool); m {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	for _, p := range u.Tools.Deny {
		if m, _ := path.Match(p, tool); m {
			return false
		}
	}
	return true
}

// ValidUpstreamName checks a name that prefixes tools: 1 to 32 letters,
// digits, '-' and '_', starting with a letter or digit, without "__" (the
// separator) and not ending in '_'.
func ValidUpstreamName(name string) error {
	if name == "" {
		return errors.New("upstream name is empty")
	}
	if len(name) > maxUpstreamName {
		return fmt.Errorf("upstream name %q is over %d characters", name, maxUpstreamName)
	}
	for i, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case (r == '-' || r == '_') && i > 0:
		default:
			return fmt.Errorf("upstream name %q: use letters, digits, '-' and '_', starting with a letter or digit", name)
		}
	}
	if strings.Contains(name, "__") || strings.HasSuffix(name, "_") {
		return fmt.Errorf("upstream name %q must not contain \"__\" or end in '_': \"__\" separates it from tool names", name)
	}
	return nil
}

// Validate checks one upstream.
func (u *Upstream) Validate() error {
	if err := ValidUpstreamName(u.Name); err != nil {
		return err
	}
	switch {
	case u.Command == "" && u.URL == "":
		return fmt.Errorf("upstream %q: set command (a stdio server) or url (a Streamable HTTP server)", u.Name)
	case u.Command != "" && u.URL != "":
		return fmt.Errorf("upstream %q: set only one of command and url", u.Name)
	}
	if u.URL != "" {
		if len(u.Args) > 0 || len(u.Env) > 0 || u.Cwd != "" {
			return fmt.Errorf("upstream %q: args, env and cwd apply to a command, not to a url", u.Name)
		}
		pu, err := url.Parse(u.URL)
		if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			return fmt.Errorf("upstream %q: url %q is not an http:// or https:// URL", u.Name, u.URL)
		}
		for k := range u.Headers {
			if k == "" || strings.ContainsAny(k, " :\r\n\t") {
				return fmt.Errorf("upstream %q: invalid header name %q", u.Name, k)
			}
		}
	} else {
		if len(u.Headers) > 0 {
			return fmt.Errorf("upstream %q: headers apply to a url, not to a command", u.Name)
		}
		if u.Cwd != "" && !filepath.IsAbs(u.Cwd) {
			return fmt.Errorf("upstream %q: cwd %q must be an absolute path", u.Name, u.Cwd)
		}
		for k := range u.Env {
			if k == "" || strings.ContainsAny(k, "=\x00") {
				return fmt.Errorf("upstream %q: invalid environment variable name %q", u.Name, k)
			}
		}
	}
	for k, v := range u.Headers {
		if strings.ContainsAny(v, "\r\n") {
			return fmt.Errorf("upstream %q: header %q has a line break", u.Name, k)
		}
	}
	if u.Timeout < 0 {
		return fmt.Errorf("upstream %q: timeout must not be negative", u.Name)
	}
	if r := u.RetryCount(); r < 0 || r > 10 {
		return fmt.Errorf("upstream %q: retries must be between 0 and 10, got %d", u.Name, r)
	}
	if u.Tools != nil {
		for _, p := range append(append([]string{}, u.Tools.Allow...), u.Tools.Deny...) {
			if _, err := path.Match(p, ""); err != nil || p == "" {
				return fmt.Errorf("upstream %q: bad tool pattern %q (use * ? and [...])", u.Name, p)
			}
		}
	}
	return nil
}

// validateUpstreams checks every upstream and that names are unique.
func validateUpstreams(us []Upstream) error {
	seen := map[string]bool{}
	for i := range us {
		if err := us[i].Validate(); err != nil {
			return err
		}
		if seen[us[i].Name] {
			return fmt.Errorf("upstream %q is defined twice", us[i].Name)
		}
		seen[us[i].Name] = true
	}
	return nil
}

// Upstream returns the upstream named name, or nil.
func (c *Config) Upstream(name string) *Upstream {
	for i := range c.Upstreams {
		if c.Upstreams[i].Name == name {
			return &c.Upstreams[i]
		}
	}
	return nil
}

// Duration is a time.Duration written as a string ("60s", "2m") in TOML.
type Duration time.Duration

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("invalid duration %q (use a number with a unit, like 30s or 2m)", b)
	}
	*d = Duration(v)
	return nil
}

// Check reports whether c would read back from a file as valid: it runs the
// checks of Parse on c's encoding, so that an edit is refused before it is
// saved rather than when the daemon reads it.
func Check(c *Config) error {
	b, err := toml.Marshal(c)
	if err != nil {
		return fmt.Errorf("encode config: %w", err)
	}
	_, err = Parse(b, "config.toml")
	return err
}

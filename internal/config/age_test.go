package config

import (
	"strings"
	"testing"
	"time"
)

func TestParseAge(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Duration
	}{
		{"30d", 30 * 24 * time.Hour}, {"2w", 14 * 24 * time.Hour}, {"12h", 12 * time.Hour},
		{"90m", 90 * time.Minute}, {"1h30m", 90 * time.Minute}, {" 7d ", 7 * 24 * time.Hour}, {"3650d", MaxAge},
	} {
		if got, err := ParseAge(tt.in); err != nil || got != tt.want {
			t.Errorf("ParseAge(%q): got %v %v, want %v", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{"", "d", "0d", "-1d", "30", "30x", "3651d", "9223372036854775807d", "1.5d", "d30", "-5m", "0s", "100000h"} {
		if got, err := ParseAge(in); err == nil {
			t.Errorf("ParseAge(%q): got %v, want an error", in, got)
		}
	}
}

func TestRetentionInConfig(t *testing.T) {
	c, err := Parse([]byte(`retention = "30d"`), "config.toml")
	if err != nil || c.Retention != "30d" {
		t.Fatalf("got %+v %v", c, err)
	}
	if _, err := Parse([]byte(`retention = "forever"`), "config.toml"); err == nil || !strings.Contains(err.Error(), "retention") {
		t.Errorf("bad retention: got %v", err)
	}
}

func TestMessageTTLInConfig(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Duration
	}{{``, 0}, {`message_ttl = "0"`, -1}, {`message_ttl = "2h"`, 2 * time.Hour}, {`message_ttl = "7d"`, 7 * 24 * time.Hour}} {
		c, err := Parse([]byte(tt.in), "config.toml")
		if err != nil || c.TTL() != tt.want {
			t.Errorf("%s: got %v, %v; want %v", tt.in, c.TTL(), err, tt.want)
		}
	}
	for _, bad := range []string{`message_ttl = "soon"`, `message_ttl = "31d"`, `message_ttl = "-1h"`} {
		if _, err := Parse([]byte(bad), "config.toml"); err == nil || !strings.Contains(err.Error(), "message_ttl") {
			t.Errorf("%s: got %v, want a message_ttl error", bad, err)
		}
	}
}

func TestUnjoinedTTLInConfig(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Duration
	}{{``, 0}, {`unjoined_ttl = "0"`, -1}, {`unjoined_ttl = "30m"`, 30 * time.Minute}} {
		c, err := Parse([]byte(tt.in), "config.toml")
		if err != nil || c.UnjoinedAge() != tt.want {
			t.Errorf("%s: got %v, %v; want %v", tt.in, c.UnjoinedAge(), err, tt.want)
		}
	}
	for _, bad := range []string{`unjoined_ttl = "soon"`, `unjoined_ttl = "31d"`, `unjoined_ttl = "-1h"`} {
		if _, err := Parse([]byte(bad), "config.toml"); err == nil || !strings.Contains(err.Error(), "unjoined_ttl") {
			t.Errorf("%s: got %v, want an unjoined_ttl error", bad, err)
		}
	}
}

func TestUnusedAgentGraceInConfig(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Duration
	}{{``, 0}, {`unused_agent_grace = "2s"`, 2 * time.Second}, {`unused_agent_grace = "1h"`, time.Hour}} {
		c, err := Parse([]byte(tt.in), "config.toml")
		if err != nil || c.UnusedAgentAge() != tt.want {
			t.Errorf("%s: got %v, %v; want %v", tt.in, c.UnusedAgentAge(), err, tt.want)
		}
	}
	for _, bad := range []string{`unused_agent_grace = "soon"`, `unused_agent_grace = "0"`, `unused_agent_grace = "31d"`, `unused_agent_grace = "-1h"`} {
		if _, err := Parse([]byte(bad), "config.toml"); err == nil || !strings.Contains(err.Error(), "unused_agent_grace") {
			t.Errorf("%s: got %v, want an unused_agent_grace error", bad, err)
		}
	}
}

func FuzzParseAge(f *testing.F) {
	for _, s := range []string{"30d", "2w", "1h30m", "-1d", "9223372036854775807d", "0.5h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseAge(s)
		if err == nil && (d <= 0 || d > MaxAge) {
			t.Fatalf("ParseAge(%q) = %v: out of range", s, d)
		}
	})
}

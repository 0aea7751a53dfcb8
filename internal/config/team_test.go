package config

import (
	"strings"
	"testing"
	"time"
)

// TestDaemonTimeout: the bound after which the other daemons on a shared
// store take a silent one for dead.
func TestDaemonTimeout(t *testing.T) {
	for _, tt := range []struct {
		name, toml string
		want       time.Duration
		wantErr    string
	}{
		{name: "default", toml: ``, want: 0},
		{name: "set", toml: `daemon_timeout = "45s"`, want: 45 * time.Second},
		{name: "short for tests", toml: `daemon_timeout = "1s"`, want: time.Second},
		{name: "too short", toml: `daemon_timeout = "500ms"`, wantErr: `invalid daemon_timeout "500ms"`},
		{name: "too long", toml: `daemon_timeout = "2h"`, wantErr: `invalid daemon_timeout "2h"`},
		{name: "not a duration", toml: `daemon_timeout = "soon"`, wantErr: `invalid daemon_timeout "soon"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.toml), "config.toml")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.DeadAfter(); got != tt.want {
				t.Errorf("DeadAfter: got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestTeamServerConfig: TLS certificate and key go together; public_url is a
// URL.
func TestTeamServerConfig(t *testing.T) {
	for _, tt := range []struct {
		name, toml, wantErr string
	}{
		{name: "tls", toml: "listen = \"0.0.0.0:7474\"\ntls_cert = \"/etc/parley/cert.pem\"\ntls_key = \"/etc/parley/key.pem\""},
		{name: "cert alone", toml: `tls_cert = "/etc/parley/cert.pem"`, wantErr: "tls_cert and tls_key go together"},
		{name: "key alone", toml: `tls_key = "/etc/parley/key.pem"`, wantErr: "tls_cert and tls_key go together"},
		{name: "public url", toml: `public_url = "https://parley.example.com"`},
		{name: "public url without scheme", toml: `public_url = "parley.example.com:7474"`, wantErr: "invalid public_url"},
		{name: "public url of another scheme", toml: `public_url = "ftp://parley.example.com"`, wantErr: "invalid public_url"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.toml), "config.toml")
			if tt.wantErr == "" && err != nil {
				t.Fatal(err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("got %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

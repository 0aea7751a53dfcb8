package config

import (
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/notify"
)

func TestNotifyConfig(t *testing.T) {
	c, err := Parse([]byte(`
[[notify]]
url = "https://hooks.example.com/parley"
headers = { Authorization = "Bearer x" }

[[notify]]
name = "phone"
url = "https://ntfy.sh/team-alerts"
format = "ntfy"
on = ["permission", "critical"]
`), "config.toml")
	if err != nil {
		t.Fatal(err)
	}
	eps := NotifyEndpoints(c.Notify)
	if len(eps) != 2 || eps[0].Kinds != nil || eps[0].Headers["Authorization"] != "Bearer x" ||
		eps[1].Format != notify.Ntfy || len(eps[1].Kinds) != 2 || eps[1].Kinds[0] != notify.Permission {
		t.Errorf("endpoints: got %+v", eps)
	}
	for _, tt := range []struct{ conf, want string }{
		{`[[notify]]` + "\n" + `url = "ftp://x/y"`, "http or https"},
		{`[[notify]]` + "\n" + `url = "/relative"`, "http or https"},
		{`[[notify]]` + "\n" + `url = "https://x"` + "\n" + `format = "slack"`, `invalid format "slack"`},
		{`[[notify]]` + "\n" + `name = "p"` + "\n" + `url = "https://x"` + "\n" + `on = ["everything"]`, `notify "p": unknown kind "everything"`},
	} {
		if _, err := Parse([]byte(tt.conf), "config.toml"); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: got %v, want an error containing %q", tt.conf, err, tt.want)
		}
	}
}

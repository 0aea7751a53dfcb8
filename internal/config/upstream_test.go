package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseUpstreams(t *testing.T) {
	const file = `
listen = "127.0.0.1:7777"

[[upstream]]
name = "everything"
command = "node"
args = ["index.js", "stdio"]
env = { DEBUG = "1" }
cwd = "/srv"
timeout = "90s"
retries = 0
tools.allow = ["get-*", "echo"]
tools.deny = ["get-env"]

[[upstream]]
name = "remote_1"
url = "https://mcp.example.com/mcp"
headers = { Authorization = "Bearer x" }
enabled = false
`
	c, err := Parse([]byte(file), "config.toml")
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:7777" || len(c.Upstreams) != 2 {
		t.Fatalf("got %+v, want listen and 2 upstreams", c)
	}
	ev, rm := c.Upstreams[0], c.Upstreams[1]
	if ev.Transport() != "stdio" || ev.CallTimeout() != 90*time.Second || ev.RetryCount() != 0 || !ev.IsEnabled() || ev.Env["DEBUG"] != "1" {
		t.Errorf("got %+v, want the stdio upstream as written", ev)
	}
	if rm.Transport() != "http" || rm.IsEnabled() || rm.CallTimeout() != DefaultUpstreamTimeout || rm.RetryCount() != DefaultUpstreamRetries || rm.Headers["Authorization"] != "Bearer x" {
		t.Errorf("got %+v, want the disabled http upstream with default timeout and retries", rm)
	}
	filter := []struct {
		tool string
		want bool
	}{
		{"get-sum", true}, {"echo", true}, {"get-env", false}, {"toggle", false}, {"echoes", false},
	}
	for _, f := range filter {
		if got := ev.Allows(f.tool); got != f.want {
			t.Errorf("Allows(%q): got %v, want %v", f.tool, got, f.want)
		}
	}
	if c.Upstream("remote_1") != &c.Upstreams[1] || c.Upstream("nope") != nil {
		t.Errorf("Upstream lookup: got the wrong entries")
	}
}

func TestUpstreamErrors(t *testing.T) {
	tests := []struct {
		name, file, want string
	}{
		{"no name", `[[upstream]]
command = "x"`, "upstream name is empty"},
		{"bad name", `[[upstream]]
name = "a b"
command = "x"`, "use letters, digits"},
		{"separator in name", `[[upstream]]
name = "a__b"
command = "x"`, `must not contain "__"`},
		{"trailing underscore", `[[upstream]]
name = "a_"
command = "x"`, `end in '_'`},
		{"long name", `[[upstream]]
name = "` + strings.Repeat("a", 33) + `"
command = "x"`, "over 32 characters"},
		{"neither", `[[upstream]]
name = "a"`, "set command (a stdio server) or url"},
		{"both", `[[upstream]]
name = "a"
command = "x"
url = "http://h/mcp"`, "only one of command and url"},
		{"duplicate", `[[upstream]]
name = "a"
command = "x"
[[upstream]]
name = "a"
command = "y"`, `upstream "a" is defined twice`},
		{"bad url", `[[upstream]]
name = "a"
url = "ftp://h/mcp"`, "not an http:// or https:// URL"},
		{"args with url", `[[upstream]]
name = "a"
url = "http://h/mcp"
args = ["x"]`, "apply to a command"},
		{"headers with command", `[[upstream]]
name = "a"
command = "x"
headers = { A = "b" }`, "headers apply to a url"},
		{"relative cwd", `[[upstream]]
name = "a"
command = "x"
cwd = "rel"`, "must be an absolute path"},
		{"bad duration", `[[upstream]]
name = "a"
command = "x"
timeout = "soon"`, `invalid duration "soon"`},
		{"negative retries", `[[upstream]]
name = "a"
command = "x"
retries = -1`, "retries must be between 0 and 10"},
		{"bad pattern", `[[upstream]]
name = "a"
command = "x"
tools.deny = ["["]`, `bad tool pattern "["`},
		{"unknown key", `[[upstream]]
name = "a"
command = "x"
comand = "y"`, "comand"},
		{"header line break", `[[upstream]]
name = "a"
url = "http://h/mcp"
headers = { A = "b\r\nC: d" }`, "line break"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.file), "config.toml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error mentioning %q", err, tc.want)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "config.toml") {
				t.Errorf("got %q, want the file named first", err)
			}
		})
	}
}

func TestEditKeepsOtherSettings(t *testing.T) {
	const file = "listen = \"127.0.0.1:9\"\nmax_message_bytes = 1000\nnudge = \"tmux\"\n"
	off, zero := false, 0
	ups := []Upstream{
		{Name: "a", Command: "srv", Args: []string{"--x"}, Env: map[string]string{"K": "v"}, Timeout: Duration(5 * time.Second), Retries: &zero},
		{Name: "b", URL: "http://h/mcp", Enabled: &off, Tools: &ToolFilter{Deny: []string{"x*"}}},
	}
	text, err := EditUpstreams([]byte(file), "config.toml", func(c *Config) error { c.Upstreams = ups; return nil })
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse(text, "config.toml")
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{Listen: "127.0.0.1:9", MaxMessageBytes: 1000, Nudge: "tmux", Upstreams: ups}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v after a round trip, want %+v", got, want)
	}
	if !strings.HasPrefix(string(text), file) {
		t.Errorf("the settings before the upstreams changed:\n%s", text)
	}
	want.Upstreams = append(want.Upstreams, Upstream{Name: "a", Command: "again"})
	if err := Check(want); err == nil || !strings.Contains(err.Error(), "defined twice") {
		t.Errorf("Check: got %v, want the duplicate refused", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("[[upstream]]\nname = \"a\"\ncommand = \"x\"\ntimeout = \"1s\"\ntools.allow = [\"*\"]\n"))
	f.Add([]byte("listen = \"127.0.0.1:1\"\n[[upstream]]\nname = \"b\"\nurl = \"http://h\"\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(b, "config.toml")
		if err != nil {
			return
		}
		// Whatever parses passes Check, which edits rely on.
		if err := Check(c); err != nil {
			t.Fatalf("parsed config fails Check: %v", err)
		}
	})
}

package config

import (
	"strings"
	"testing"
)

// commented is a config.toml as a person writes it: comments everywhere,
// dotted keys, inline tables, a table after the upstreams.
const commented = `# Parley settings for my laptop.
listen = "127.0.0.1:7777" # for the phone

# Files, from the file server.
[[upstream]]
name = "files"
command = "mcp-files" # from npm
args = ["--root", "/srv"]
tools.deny = ["rm*"] # never delete

# The wiki; disabled while it moves.
[[upstream]]
name = "wiki"
url = "https://wiki.example.com/mcp"
enabled = true # flip me
[upstream.headers]
Authorization = "Bearer x"

# trailing notes about notify
[[notify]]
url = "https://hooks.example.com/x" # ops channel
`

func TestEditUpstreamsKeepsComments(t *testing.T) {
	off := false
	tests := []struct {
		name string
		edit func(*Config) error
		want string // the whole new file
	}{{
		name: "add",
		edit: func(c *Config) error {
			c.Upstreams = append(c.Upstreams, Upstream{Name: "echo", Command: "echo-mcp", Args: []string{"-v"}})
			return nil
		},
		want: commented + `
[[upstream]]
name = 'echo'
command = 'echo-mcp'
args = ['-v']
`,
	}, {
		name: "remove the first, with the comment that introduces it",
		edit: func(c *Config) error { c.Upstreams = c.Upstreams[1:]; return nil },
		want: strings.Replace(commented, `# Files, from the file server.
[[upstream]]
name = "files"
command = "mcp-files" # from npm
args = ["--root", "/srv"]
tools.deny = ["rm*"] # never delete

`, "", 1),
	}, {
		name: "remove the last",
		edit: func(c *Config) error { c.Upstreams = c.Upstreams[:1]; return nil },
		want: strings.Replace(commented, `# The wiki; disabled while it moves.
[[upstream]]
name = "wiki"
url = "https://wiki.example.com/mcp"
enabled = true # flip me
[upstream.headers]
Authorization = "Bearer x"

`, "", 1),
	}, {
		name: "disable keeps the table's comments",
		edit: func(c *Config) error { c.Upstreams[1].Enabled = &off; return nil },
		want: strings.Replace(commented, "enabled = true # flip me", "enabled = false # flip me", 1),
	}, {
		name: "disable adds the key when it is missing",
		edit: func(c *Config) error { c.Upstreams[0].Enabled = &off; return nil },
		want: strings.Replace(commented, "name = \"files\"\n", "enabled = false\nname = \"files\"\n", 1),
	}, {
		name: "enable drops the key: true is the default",
		edit: func(c *Config) error { c.Upstreams[1].Enabled = nil; return nil },
		want: strings.Replace(commented, "enabled = true # flip me\n", "", 1),
	}, {
		name: "replace rewrites that table only",
		edit: func(c *Config) error {
			c.Upstreams[0] = Upstream{Name: "files", Command: "mcp-files2"}
			return nil
		},
		want: strings.Replace(commented, `name = "files"
command = "mcp-files" # from npm
args = ["--root", "/srv"]
tools.deny = ["rm*"] # never delete
`, `name = 'files'
command = 'mcp-files2'
`, 1),
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := EditUpstreams([]byte(commented), "config.toml", tc.edit)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// TestEditUpstreamsUndo: removing what was added gives the file back, byte
// for byte, whatever it ends with.
func TestEditUpstreamsUndo(t *testing.T) {
	for _, file := range []string{commented, "", "# only a comment\n", "retention = \"30d\"\n\n# notes\n"} {
		added, err := EditUpstreams([]byte(file), "config.toml", func(c *Config) error {
			c.Upstreams = append(c.Upstreams, Upstream{Name: "new", Command: "x"})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		got, err := EditUpstreams(added, "config.toml", func(c *Config) error {
			c.Upstreams = c.Upstreams[:len(c.Upstreams)-1]
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != file {
			t.Errorf("add then remove: got\n%q\nwant\n%q", got, file)
		}
	}
}

func TestEditUpstreamsRefuses(t *testing.T) {
	tests := []struct {
		name, file string
		edit       func(*Config) error
		want       string
	}{
		{"an invalid result", commented, func(c *Config) error { c.Upstreams[0].URL = "http://x"; return nil }, "only one of command and url"},
		{"a file that does not parse", "listen = \n", func(*Config) error { return nil }, "config.toml"},
		{"an inline array", "upstream = [{ name = \"a\", command = \"x\" }]\n", func(c *Config) error { c.Upstreams = nil; return nil }, "edit it by hand"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := EditUpstreams([]byte(tc.file), "config.toml", tc.edit)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %q, %v; want an error saying %q", got, err, tc.want)
			}
		})
	}
}

// FuzzEditUpstreams: on any text, a no-op edit changes nothing, and an
// edit either fails or gives text that parses to the edited settings (the
// function checks the latter itself; the fuzzer looks for panics and for
// a no-op that rewrites).
func FuzzEditUpstreams(f *testing.F) {
	f.Add([]byte(commented))
	f.Add([]byte("[[upstream]]\nname = \"a\"\ncommand = \"x\"\n[upstream.env]\nK = \"v\"\n"))
	f.Add([]byte("upstream = [{ name = \"a\", command = \"x\" }]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := EditUpstreams(b, "config.toml", func(*Config) error { return nil })
		if err == nil && string(got) != string(b) {
			t.Fatalf("a no-op edit rewrote\n%q\nas\n%q", b, got)
		}
		off := false
		EditUpstreams(b, "config.toml", func(c *Config) error {
			if len(c.Upstreams) > 0 {
				c.Upstreams[0].Enabled = &off
				c.Upstreams = c.Upstreams[:len(c.Upstreams)-1]
			}
			c.Upstreams = append(c.Upstreams, Upstream{Name: "zz", Command: "x"})
			return nil
		})
	})
}

package profile

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// TestQuickArgsNeverPassesWhatTheSchemaRefuses runs the quick check and the
// schema validator side by side on every tool of every profile (the input
// schemas frozen in testdata/tools-*.json), over arguments built to probe each
// property with each kind of JSON value, wrong key cases, unknown keys and
// missing required ones. Quick may say "not sure" about valid arguments; it
// must never pass arguments the schema refuses.
func TestQuickArgsNeverPassesWhatTheSchemaRefuses(t *testing.T) {
	files, _ := filepath.Glob("testdata/tools-*.json")
	if len(files) == 0 {
		t.Fatal("no testdata/tools-*.json")
	}
	values := []string{`"x"`, `"critical"`, `"all"`, `""`, `0`, `7`, `-3`, `1.5`, `1e2`, `true`, `false`, `null`,
		`{}`, `{"k":"v"}`, `{"k":1}`, `{"k":null}`, `[]`, `["a"]`, `[1]`, `[null]`}
	quickTools, passed := 0, 0
	hot := map[string]bool{} // the native tools of the send and wait path that have the quick check
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var tools []struct {
			Name        string             `json:"name"`
			InputSchema *jsonschema.Schema `json:"inputSchema"`
		}
		if err := json.Unmarshal(b, &tools); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, tool := range tools {
			res, err := tool.InputSchema.Resolve(nil)
			if err != nil {
				t.Fatalf("%s %s: %v", f, tool.Name, err)
			}
			q := newQuickArgs(tool.InputSchema)
			if q == nil {
				continue
			}
			quickTools++
			if strings.HasSuffix(f, "tools-native.json") {
				hot[tool.Name] = true
			}
			// A base that satisfies the required properties where it can.
			base := map[string]string{}
			for _, r := range tool.InputSchema.Required {
				base[r] = sample(tool.InputSchema.Properties[r])
			}
			var cases []string
			cases = append(cases, `null`, `[]`, `{}`, `"x"`, render(base))
			for name := range tool.InputSchema.Properties {
				for _, v := range values {
					c := clone(base)
					c[name] = v
					cases = append(cases, render(c))
					c = clone(base)
					delete(c, name)
					c[strings.ToUpper(name)] = v
					cases = append(cases, render(c))
				}
				c := clone(base)
				delete(c, name)
				cases = append(cases, render(c))
			}
			c := clone(base)
			c["no_such_property"] = `"x"`
			cases = append(cases, render(c))
			for _, args := range cases {
				if !q.valid([]byte(args)) {
					continue
				}
				passed++
				var generic any
				if err := json.Unmarshal([]byte(args), &generic); err != nil {
					t.Errorf("%s %s: quick passed %s, which is not JSON", f, tool.Name, args)
					continue
				}
				if err := res.Validate(generic); err != nil {
					t.Errorf("%s %s: quick passed %s, which the schema refuses: %v", f, tool.Name, args, err)
				}
			}
		}
	}
	// The check is of use only if it covers the tools and passes valid calls.
	if quickTools < 20 || passed < 100 {
		t.Errorf("quick check covers %d tools and passed %d argument sets; want most tools and many valid calls", quickTools, passed)
	}
	for _, name := range []string{"send_message", "wait_for_message", "check_messages", "ack_message"} {
		if !hot[name] {
			t.Errorf("native %s has no quick check: its every call decodes its arguments twice", name)
		}
	}
	t.Logf("%d tools have the quick check; it passed %d argument sets", quickTools, passed)
}

// TestQuickArgsSend: the calls of the hot path take the quick check.
func TestQuickArgsSend(t *testing.T) {
	in := schemaFor(reflect.TypeFor[struct {
		To       string            `json:"to"`
		Content  string            `json:"content"`
		Metadata map[string]string `json:"metadata,omitempty"`
		Within   *int              `json:"within,omitempty"`
		Tags     []string          `json:"tags,omitempty"`
	}]())
	dropNullUnions(in)
	q := newQuickArgs(in)
	if q == nil {
		t.Fatal("no quick check for a plain input schema")
	}
	for args, want := range map[string]bool{
		`{"to":"b","content":"hi"}`: true,
		`{"to":"b","content":"hi","metadata":{"k":"v"},"within":30,"tags":["x"]}`: true,
		`{"to":"b"}`:                             false,
		`{"to":"b","content":null}`:              false,
		`{"TO":"b","content":"hi"}`:              false,
		`{"to":"b","content":"hi","x":1}`:        false,
		`{"to":"b","content":"hi","within":1.5}`: false,
	} {
		if got := q.valid([]byte(args)); got != want {
			t.Errorf("valid(%s): got %v, want %v", args, got, want)
		}
	}
}

func sample(s *jsonschema.Schema) string {
	if s == nil {
		return `"x"`
	}
	switch {
	case len(s.Enum) > 0:
		b, _ := json.Marshal(s.Enum[0])
		return string(b)
	case s.Type == "integer":
		return "1"
	case s.Type == "boolean":
		return "true"
	case s.Type == "object":
		return `{}`
	case s.Type == "array":
		return `[]`
	}
	return `"x"`
}

func clone(m map[string]string) map[string]string {
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func render(m map[string]string) string {
	var b strings.Builder
	b.WriteByte('{')
	first := true
	for k, v := range m {
		if !first {
			b.WriteByte(',')
		}
		first = false
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		b.WriteString(v)
	}
	b.WriteByte('}')
	return b.String()
}

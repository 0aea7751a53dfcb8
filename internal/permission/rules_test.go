package permission_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/parley-dev/parley/internal/permission"
)

// A live rule allows what it matches as it is filed, by the rule, for its
// time only; what it does not match waits for a person.
func TestRules(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		in := permission.New(open(t, filepath.Join(t.TempDir(), "p.db")), nil)
		u, err := in.AddRule(permission.Rule{Workspace: "w", Agent: "erin", Tool: "Bash", Match: "npm test", By: "human:ann"}, 30*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		file := func(agent, tool, input string) *permission.Request {
			t.Helper()
			r, err := in.File(ctx, permission.Request{Workspace: "w", Agent: agent, Source: permission.SourceClaudeHook, Tool: tool, Input: json.RawMessage(input)})
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		for _, tc := range []struct {
			agent, tool, input string
			allowed            bool
		}{
			{"erin", "Bash", `{"command":"npm test -- --watch=false"}`, true},
			{"erin", "Bash", `{"command":"  npm test"}`, true},
			{"erin", "Bash", `{"command":"rm -rf / && npm test"}`, false},
			{"frank", "Bash", `{"command":"npm test"}`, false},
			{"erin", "Write", `{"command":"npm test"}`, false},
		} {
			r := file(tc.agent, tc.tool, tc.input)
			if got := r.State == permission.Allowed; got != tc.allowed {
				t.Errorf("%s %s %s: allowed %v, want %v", tc.agent, tc.tool, tc.input, got, tc.allowed)
			}
			if tc.allowed && !strings.Contains(r.Decision.By, u.ID) {
				t.Errorf("allowed by %q, want the rule %s", r.Decision.By, u.ID)
			}
		}
		if rs := in.Rules("w"); len(rs) != 1 || rs[0].Uses != 2 {
			t.Errorf("rules: got %+v, want one used twice", rs)
		}
		time.Sleep(31 * time.Minute)
		if r := file("erin", "Bash", `{"command":"npm test"}`); r.State != permission.Pending {
			t.Errorf("after the rule's time: got %s, want pending", r.State)
		}
		if rs := in.Rules("w"); len(rs) != 0 {
			t.Errorf("expired rules still listed: %+v", rs)
		}
		if _, err := in.AddRule(permission.Rule{Workspace: "w", Tool: "Bash"}, 48*time.Hour); err == nil {
			t.Error("a rule of 48 hours: got no error")
		}
		u2, _ := in.AddRule(permission.Rule{Workspace: "w", Tool: "Bash"}, time.Hour)
		if err := in.RemoveRule("w", u2.ID); err != nil {
			t.Fatal(err)
		}
		if r := file("frank", "Bash", `{"command":"ls"}`); r.State != permission.Pending {
			t.Errorf("after removing the rule: got %s, want pending", r.State)
		}
	})
}

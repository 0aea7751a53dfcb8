package tmux_test

import (
	"testing"

	"github.com/parley-dev/parley/internal/tmux"
)

func TestHasInput(t *testing.T) {
	for _, tc := range []struct {
		line string
		want bool
	}{
		{"", false},
		{"$ ", false},
		{"user@host:~/src$ ", false},
		{"user@host:~/src$ git sta", true},
		{"│ >                                  │", false},
		{"│ > fix the bug                      │", true},
		{"› ", false},
		{"❯ ", false},
		{"$ echo a >", true},
		{"half a thought", true},
		{"> ", false},
	} {
		if got := (tmux.PaneState{Line: tc.line}).HasInput(); got != tc.want {
			t.Errorf("HasInput(%q): got %v, want %v", tc.line, got, tc.want)
		}
	}
}

func TestAgentName(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"reviewer", "reviewer"},
		{"my window", "my-window"},
		{"  -zsh", "zsh"},
		{"a/b:c", "a-b-c"},
		{"***", ""},
		{"écrivain", "écrivain"},
	} {
		if got := tmux.AgentName(tc.in); got != tc.want {
			t.Errorf("AgentName(%q): got %q, want %q", tc.in, got, tc.want)
		}
	}
}

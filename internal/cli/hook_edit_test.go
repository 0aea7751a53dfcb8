package cli

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPatchFiles(t *testing.T) {
	patch := "*** Begin Patch\n" +
		"*** Add File: src/new.go\n+package src\n" +
		"*** Update File: src/old.go\n*** Move to: src/moved.go\n@@\n-a\n+b\n" +
		"*** Delete File: README.md\n" +
		"*** Update File: src/new.go\n@@\n-x\n+*** Add File: not/a/header.go\n" +
		"*** End Patch\n"
	got := patchFiles(patch)
	want := []string{"src/new.go", "src/old.go", "src/moved.go", "README.md"}
	if !slices.Equal(got, want) {
		t.Errorf("patchFiles: got %q, want %q", got, want)
	}
	if got := patchFiles("not a patch"); len(got) != 0 {
		t.Errorf("patchFiles of no patch: got %q, want none", got)
	}
}

// TestHookTimeout: PARLEY_HOOK_TIMEOUT sets a hook's bound; a bad value is
// said, and the default holds.
func TestHookTimeout(t *testing.T) {
	var errs strings.Builder
	g := &globals{stderr: &errs}
	for _, tc := range []struct {
		env  string
		want time.Duration
		warn bool
	}{
		{"", defaultHookTimeout, false},
		{"8s", 8 * time.Second, false},
		{"soon", defaultHookTimeout, true},
		{"-1s", defaultHookTimeout, true},
	} {
		errs.Reset()
		t.Setenv(envHookTimeout, tc.env)
		if got := hookTimeout(g); got != tc.want || (errs.Len() > 0) != tc.warn {
			t.Errorf("%s=%q: got %s, stderr %q; want %s, a warning: %v", envHookTimeout, tc.env, got, errs.String(), tc.want, tc.warn)
		}
	}
}

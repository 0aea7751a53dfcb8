package cli

import (
	"slices"
	"testing"
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

package cli

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestHelpGolden freezes every command's --help (testdata/help/), so that a
// change of what the CLI says is a reviewed change: run go test -update after
// checking it.
func TestHelpGolden(t *testing.T) {
	root := newRoot(&globals{})
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			return
		}
		paths = append(paths, path)
		for _, sub := range c.Commands() {
			walk(sub, append(append([]string(nil), path...), sub.Name()))
		}
	}
	walk(root, nil)
	if len(paths) < 40 {
		t.Fatalf("found %d commands; the walk is broken", len(paths))
	}
	seen := map[string]bool{}
	for _, p := range paths {
		var out, errb bytes.Buffer
		if code := Main(context.Background(), append(append([]string(nil), p...), "--help"), nil, &out, &errb); code != 0 {
			t.Errorf("parley %s --help: exit %d, %s", strings.Join(p, " "), code, errb.String())
			continue
		}
		name := "parley"
		if len(p) > 0 {
			name += "-" + strings.Join(p, "-")
		}
		seen[name+".txt"] = true
		golden(t, filepath.Join("testdata", "help", name+".txt"), out.Bytes())
	}
	// A golden file of a command that is gone fails too.
	ents, _ := os.ReadDir(filepath.Join("testdata", "help"))
	for _, e := range ents {
		if !seen[e.Name()] {
			if *update {
				os.Remove(filepath.Join("testdata", "help", e.Name()))
			} else {
				t.Errorf("testdata/help/%s: no such command any more (run go test -update)", e.Name())
			}
		}
	}
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (run go test -update after checking the change):\n%s", path, got)
	}
}

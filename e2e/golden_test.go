package e2e

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		os.MkdirAll("testdata", 0o755)
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
		t.Errorf("%s differs from the golden file (run go test -update after checking the change):\n%s", name, got)
	}
}

// TestHelpGolden freezes the help of the messaging commands.
func TestHelpGolden(t *testing.T) {
	e := newEnv(t)
	for _, args := range [][]string{{"send", "--help"}, {"wait", "--help"}} {
		out := e.Must(args...)
		name := "help"
		for _, a := range args[:len(args)-1] {
			name += "-" + a
		}
		golden(t, name+".txt", []byte(out))
	}
}

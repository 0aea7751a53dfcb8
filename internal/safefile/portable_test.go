package safefile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// openChecked is what Windows uses instead of O_NOFOLLOW; it runs here too,
// so that Linux CI checks the fallback.
func TestOpenCheckedRefusesLinks(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	os.WriteFile(victim, []byte("precious"), 0o600)
	link := filepath.Join(dir, "daemon.log")
	if err := os.Symlink(victim, link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	for _, open := range []struct {
		name string
		f    func(string, int, os.FileMode) (*os.File, error)
	}{{"fallback", openChecked}, {"this platform's", openNoFollow}} {
		t.Run(open.name, func(t *testing.T) {
			f, err := open.f(link, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
			if err == nil || !strings.Contains(err.Error(), "symbolic link") {
				f.Close()
				t.Fatalf("open through a link: got %v, want a refusal", err)
			}
			path := filepath.Join(dir, open.name+".log")
			f, err = open.f(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
			if err != nil {
				t.Fatalf("open a new file: %v", err)
			}
			f.WriteString("line\n")
			f.Close()
			if b, _ := os.ReadFile(path); string(b) != "line\n" {
				t.Errorf("written: got %q", b)
			}
		})
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Errorf("victim: got %q, want it untouched", b)
	}
}

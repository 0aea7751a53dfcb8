package door

import (
	"encoding/json"
	"os"
	"testing"
)

// TestCertifiedArePinned: a door is certified for the very version the
// e2e tests install and run (test/npm/package.json): a pin that moves
// without its certificate, or the reverse, fails here.
func TestCertifiedArePinned(t *testing.T) {
	b, err := os.ReadFile("../../test/npm/package.json")
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	for name, c := range Certified {
		if got := pkg.Dependencies[c.Package]; got != c.Version {
			t.Errorf("%s: certified %s %s, test/npm pins %q", name, c.Package, c.Version, got)
		}
	}
}

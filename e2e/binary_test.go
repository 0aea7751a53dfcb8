package e2e

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoDynamicMethodLookup: nothing in the binary looks a method up by
// name or index at run time (reflect.Value.Method, MethodByName). Once one
// call of either is reachable, the linker must keep every exported method of
// every type that can reach an interface, used or not: cobra's version
// template (text/template calls MethodByName) grew the binary from 33.2 to
// 36.4 MB and an idle daemon's resident code pages by 1.3 MB.
func TestNoDynamicMethodLookup(t *testing.T) {
	out, err := exec.Command("go", "tool", "nm", bin).Output()
	if err != nil {
		t.Fatalf("go tool nm: %v", err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) < 3 {
			continue
		}
		if sym := f[len(f)-1]; sym == "reflect.Value.Method" || sym == "reflect.Value.MethodByName" {
			t.Errorf("the binary links %s: find its caller with `go build -ldflags=-dumpdep ./cmd/parley 2>&1 | grep %s`", sym, sym)
		}
	}
}

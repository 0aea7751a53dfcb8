package profile

import (
	"context"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/ops"
)

// TestWorkaroundsOff: PARLEY_SDK_WORKAROUNDS=-typed,-quickargs turns the
// typed adapter (tools go through mcp.AddTool) and the quick argument check
// off, for docs/performance.md's measurements. The variable is read once per
// process, so the test runs itself again with it set.
func TestWorkaroundsOff(t *testing.T) {
	type in struct {
		To string `json:"to"`
	}
	schema := schemaFor(reflect.TypeFor[in]())
	tool := typed(&Host{}, "t", "a tool", ops.Define("t", ops.Agent, ops.Whoami, func(context.Context, *ops.Caller, in) (api.Empty, error) {
		return api.Empty{}, nil
	}))
	switch os.Getenv("PARLEY_TEST_WORKAROUNDS_CHILD") {
	case "1":
		if quickFor(schema) != nil {
			t.Error("-quickargs, yet the quick check is on")
		}
		if tool.add == nil {
			t.Error("-typed, yet the tool has our adapter, not mcp.AddTool")
		}
		return
	}
	if os.Getenv("PARLEY_SDK_WORKAROUNDS") == "" {
		if quickFor(schema) == nil {
			t.Error("no quick check for a plain schema with the workarounds on")
		}
		if tool.add != nil || tool.Handler == nil {
			t.Error("the typed adapter is off with the workarounds on")
		}
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestWorkaroundsOff$", "-test.v")
	cmd.Env = append(os.Environ(), "PARLEY_TEST_WORKAROUNDS_CHILD=1", "PARLEY_SDK_WORKAROUNDS=-typed,-quickargs")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestWorkaroundsOff") {
		t.Fatalf("with PARLEY_SDK_WORKAROUNDS=-typed,-quickargs: %v\n%s", err, out)
	}
}

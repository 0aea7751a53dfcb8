package testenv

import (
	"os"
	"strings"
)

// GoRace is the GORACE setting for the commands a test starts: the
// caller's own GORACE after atexit_sleep_ms=0. A program built with -race
// otherwise sleeps a second before it exits (ThreadSanitizer's default,
// so that other threads can still report a race), and the suite starts
// thousands of them: every CLI call, hook and `parley mcp serve`. A race
// is still reported, and fails its test, when it happens.
func GoRace() string {
	return "GORACE=" + strings.TrimSpace("atexit_sleep_ms=0 "+os.Getenv("GORACE"))
}

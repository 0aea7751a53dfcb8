package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// testdata/stream.json is what `go test -json ./...` printed for a module of
// two packages: a passes, fails (in a sub-test) and skips a test; b passes.

func TestPrintsWhatPlainGoTestPrints(t *testing.T) {
	f, err := os.Open("testdata/stream.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out, progress bytes.Buffer
	s := newState(2, &out, &progress)
	s.follow(f, time.Hour)
	got := out.String()
	for _, want := range []string{"a_test.go:7: the sub-test's reason", "--- FAIL: TestFail ", "FAIL\texample.com/fx/a\t", "ok  \texample.com/fx/b\t"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	for _, not := range []string{"quiet when it passes", "also quiet", "=== RUN", "not here", "PASS\n"} {
		if strings.Contains(got, not) {
			t.Errorf("output has %q, which a plain run does not print:\n%s", not, got)
		}
	}
	if want := "example.com/fx/a TestFail 0s"; !strings.Contains(progress.String(), "slowest tests: ") || !strings.Contains(progress.String(), want) || !strings.Contains(progress.String(), "2 tests passed, 1 skipped, 1 packages failed") {
		t.Errorf("summary: got %q", progress.String())
	}
}

func TestProgressNamesWhatRuns(t *testing.T) {
	b, err := os.ReadFile("testdata/stream.json")
	if err != nil {
		t.Fatal(err)
	}
	var out, progress bytes.Buffer
	s := newState(2, &out, &progress)
	// Up to TestFail's start: b has not begun, a runs TestFail.
	for _, line := range strings.Split(string(b), "\n") {
		var e event
		if json.Unmarshal([]byte(line), &e) != nil {
			continue
		}
		s.take(e)
		if e.Action == "run" && e.Test == "TestFail" {
			break
		}
	}
	s.report()
	got := progress.String()
	if !strings.Contains(got, "0 of 2 packages done") || !strings.Contains(got, "1 tests passed") || !strings.Contains(got, "running example.com/fx/a (TestFail ") {
		t.Errorf("progress line: got %q", got)
	}
}

func TestPassingSubtestsStayQuiet(t *testing.T) {
	var out, progress bytes.Buffer
	s := newState(1, &out, &progress)
	for _, e := range []event{
		{Action: "run", Package: "p", Test: "TestA"},
		{Action: "run", Package: "p", Test: "TestA/ok"},
		{Action: "output", Package: "p", Test: "TestA/ok", Output: "    fine\n"},
		{Action: "output", Package: "p", Test: "TestA/ok", Output: "--- PASS: TestA/ok (0.00s)\n"},
		{Action: "pass", Package: "p", Test: "TestA/ok"},
		{Action: "run", Package: "p", Test: "TestA/bad"},
		{Action: "output", Package: "p", Test: "TestA/bad", Output: "    broken\n"},
		{Action: "output", Package: "p", Test: "TestA/bad", Output: "--- FAIL: TestA/bad (0.00s)\n"},
		{Action: "fail", Package: "p", Test: "TestA/bad"},
		{Action: "output", Package: "p", Test: "TestA", Output: "--- FAIL: TestA (0.00s)\n"},
		{Action: "fail", Package: "p", Test: "TestA"},
	} {
		s.take(e)
	}
	if got, want := out.String(), "    broken\n--- FAIL: TestA/bad (0.00s)\n--- FAIL: TestA (0.00s)\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

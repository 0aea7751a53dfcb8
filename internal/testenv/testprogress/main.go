// Command testprogress reads `go test -json` on stdin and prints what a plain
// `go test` would (a line per package as it finishes, and the output of the
// tests that fail), plus, every minute on stderr, a progress line that moves
// while a long package runs: the packages done, the tests passed, and what
// is running now and for how long. scripts/test runs the suite through it.
//
//	go test -json ./... | go run ./internal/testenv/testprogress -packages N
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Time       time.Time
	Action     string
	Package    string
	ImportPath string // build-output and build-fail
	Test       string
	Output     string
	Elapsed    float64 // seconds, on pass, fail and skip
}

// run is a top-level test that has not ended, with its output and its
// sub-tests', each line named by the test that wrote it.
type run struct {
	start time.Time
	out   []line
}

type line struct{ test, text string }

type timed struct {
	name    string
	elapsed time.Duration
}

// maxSlowest is how many of the slowest tests the summary names.
const maxSlowest = 8

// text is the output a plain run prints of a failed test: its own lines,
// and its sub-tests' except those of the ones that passed or skipped.
func (r *run) text() string {
	var b strings.Builder
	for _, l := range r.out {
		b.WriteString(l.text)
	}
	return b.String()
}

// drop forgets the lines of sub-test name and of its own sub-tests.
func (r *run) drop(name string) {
	r.out = slices.DeleteFunc(r.out, func(l line) bool {
		return l.test == name || strings.HasPrefix(l.test, name+"/")
	})
}

type state struct {
	mu       sync.Mutex
	begun    time.Time
	total    int
	done     int
	failed   []string
	passed   int
	skipped  int
	slowest  []timed                    // the top-level tests that took longest, longest first
	running  map[string]time.Time       // package -> start
	tests    map[string]map[string]*run // package -> test -> output so far
	build    map[string]*strings.Builder
	stdout   io.Writer
	progress io.Writer
}

func main() {
	total := flag.Int("packages", 0, "how many packages the run tests, for the progress line")
	every := flag.Duration("every", time.Minute, "how often to print the progress line")
	flag.Parse()
	s := newState(*total, os.Stdout, os.Stderr)
	s.follow(os.Stdin, *every)
}

func newState(total int, stdout, progress io.Writer) *state {
	return &state{begun: time.Now(), total: total, running: map[string]time.Time{},
		tests: map[string]map[string]*run{}, build: map[string]*strings.Builder{},
		stdout: stdout, progress: progress}
}

// follow reads the event stream to its end, printing a progress line every
// so often, and a summary at the end.
func (s *state) follow(in io.Reader, every time.Duration) {
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				s.report()
			}
		}
	}()
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			// Not test2json's: go vet's or the linker's words. Say them.
			fmt.Fprintln(s.stdout, sc.Text())
			continue
		}
		s.take(e)
	}
	close(stop)
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.progress, "==> go test: %d packages in %s, %d tests passed, %d skipped, %d packages failed %v\n",
		s.done, time.Since(s.begun).Round(time.Second), s.passed, s.skipped, len(s.failed), s.failed)
	if len(s.slowest) > 0 {
		var parts []string
		for _, t := range s.slowest {
			parts = append(parts, fmt.Sprintf("%s %s", t.name, t.elapsed.Round(time.Second)))
		}
		fmt.Fprintf(s.progress, "==> slowest tests: %s\n", strings.Join(parts, ", "))
	}
}

func (s *state) take(e event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch e.Action {
	case "build-output":
		b := s.build[e.ImportPath]
		if b == nil {
			b = &strings.Builder{}
			s.build[e.ImportPath] = b
		}
		b.WriteString(e.Output)
		return
	case "build-fail":
		if b := s.build[e.ImportPath]; b != nil {
			fmt.Fprint(s.stdout, b.String())
		}
		return
	}
	if e.Test == "" {
		s.pkg(e)
		return
	}
	ts := s.tests[e.Package]
	if ts == nil {
		ts = map[string]*run{}
		s.tests[e.Package] = ts
	}
	// A sub-test's output joins its top-level test's, in the order it came:
	// that is what a plain run prints when the top-level test fails.
	top, _, sub := strings.Cut(e.Test, "/")
	r := ts[top]
	if r == nil {
		r = &run{start: e.Time}
		ts[top] = r
	}
	switch e.Action {
	case "output":
		if !verboseOnly(e.Output) {
			r.out = append(r.out, line{e.Test, e.Output})
		}
	case "pass", "skip":
		if sub {
			r.drop(e.Test)
			return
		}
		if e.Action == "pass" {
			s.passed++
		} else {
			s.skipped++
		}
		if e.Action == "pass" {
			s.timed(e)
		}
		delete(ts, top)
	case "fail":
		if sub {
			return
		}
		fmt.Fprint(s.stdout, r.text())
		s.timed(e)
		delete(ts, top)
	}
}

// timed keeps the slowest top-level tests, for the summary: what to look at
// when the suite grows slow.
func (s *state) timed(e event) {
	d := time.Duration(e.Elapsed * float64(time.Second))
	i, _ := slices.BinarySearchFunc(s.slowest, d, func(t timed, d time.Duration) int { return cmp.Compare(d, t.elapsed) })
	if i >= maxSlowest {
		return
	}
	s.slowest = slices.Insert(s.slowest, i, timed{short(e.Package) + " " + e.Test, d})
	if len(s.slowest) > maxSlowest {
		s.slowest = s.slowest[:maxSlowest]
	}
}

// verboseOnly reports whether a line of test output is one that only
// `go test -v` prints.
func verboseOnly(line string) bool {
	for _, p := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME"} {
		if strings.HasPrefix(strings.TrimLeft(line, " "), p) {
			return true
		}
	}
	return false
}

// pkg handles an event of the package itself.
func (s *state) pkg(e event) {
	switch e.Action {
	case "start":
		s.running[e.Package] = e.Time
	case "output":
		// "PASS" alone is verbose mode's; the "ok" line that follows is what
		// a plain run prints.
		if e.Output != "PASS\n" {
			fmt.Fprint(s.stdout, e.Output)
		}
	case "pass", "skip", "fail":
		if e.Action == "fail" {
			s.failed = append(s.failed, e.Package)
			// A test that never ended (a panic, the timeout) has the
			// reason in its output.
			for _, r := range s.tests[e.Package] {
				fmt.Fprint(s.stdout, r.text())
			}
		}
		delete(s.running, e.Package)
		delete(s.tests, e.Package)
		s.done++
	}
}

// report prints the progress line.
func (s *state) report() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	of := ""
	if s.total > 0 {
		of = fmt.Sprintf(" of %d", s.total)
	}
	var parts []string
	for _, p := range slices.Sorted(maps.Keys(s.running)) {
		part := short(p)
		// The longest-running top-level test says where a long package is.
		var name string
		var since time.Time
		for t, r := range s.tests[p] {
			if name == "" || r.start.Before(since) {
				name, since = t, r.start
			}
		}
		if name != "" {
			part += fmt.Sprintf(" (%s %s)", name, now.Sub(since).Round(time.Second))
		}
		parts = append(parts, part)
	}
	running := "building"
	if len(parts) > 0 {
		running = "running " + strings.Join(parts, ", ")
	}
	failed := ""
	if len(s.failed) > 0 {
		failed = fmt.Sprintf(", %d failed", len(s.failed))
	}
	fmt.Fprintf(s.progress, "==> go test: %d min, %d%s packages done%s, %d tests passed; %s\n",
		int(now.Sub(s.begun).Minutes()), s.done, of, failed, s.passed, running)
}

func short(p string) string {
	return strings.TrimPrefix(p, "github.com/parley-dev/parley/")
}

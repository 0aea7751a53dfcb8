package testenv

import (
	"os"
	"testing"
)

// TestBinaryShared: a second suite (here, a second build call, as another
// test process makes) finds the binary the first built and does not build
// again.
func TestBinaryShared(t *testing.T) {
	first, err := build(Upstream, nil)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(first)
	if err != nil || fi.Mode()&0o111 == 0 {
		t.Fatalf("got %s (%v), want an executable", first, err)
	}
	again, err := build(Upstream, nil)
	if err != nil {
		t.Fatal(err)
	}
	fi2, err := os.Stat(again)
	if again != first || err != nil || !fi2.ModTime().Equal(fi.ModTime()) {
		t.Errorf("second build: got %s (modified %v), want %s as it was (modified %v)", again, fi2.ModTime(), first, fi.ModTime())
	}
}

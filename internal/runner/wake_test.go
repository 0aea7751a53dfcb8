package runner

import (
	"testing"
	"time"
)

func TestBucket(t *testing.T) {
	b := &bucket{every: 10 * time.Second, size: 3}
	t0 := time.Unix(1000, 0)
	for i := range 3 {
		if w := b.take(t0); w != 0 {
			t.Fatalf("turn %d of the burst: wait %v, want none", i, w)
		}
	}
	if w := b.take(t0); w != 10*time.Second {
		t.Errorf("past the burst: wait %v, want 10s", w)
	}
	if w := b.take(t0.Add(4 * time.Second)); w != 6*time.Second {
		t.Errorf("4 s later: wait %v, want 6s", w)
	}
	if w := b.take(t0.Add(10 * time.Second)); w != 0 {
		t.Errorf("10 s later: wait %v, want a token", w)
	}
	// A long pause refills to the size, no more.
	t1 := t0.Add(time.Hour)
	for i := range 3 {
		if w := b.take(t1); w != 0 {
			t.Fatalf("after a pause, turn %d: wait %v", i, w)
		}
	}
	if w := b.take(t1); w == 0 {
		t.Error("the bucket held more than its size")
	}
}

package daemon

import (
	"os"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

func TestGCPercent(t *testing.T) {
	for _, tc := range []struct {
		live uint64
		want int
	}{
		{0, 100},
		{1 << 20, 6300},
		{10 << 20, 525},
		{30 << 20, 100},
		{gcFloor / 2, 100},
		{50 << 20, 25},
		{1 << 30, 25},
	} {
		if got := gcPercent(tc.live); got != tc.want {
			t.Errorf("gcPercent(%d MiB): got %d, want %d", tc.live>>20, got, tc.want)
		}
		// The goal stays at or above the floor and a quarter above the
		// live heap.
		if goal := tc.live * uint64(100+gcPercent(tc.live)) / 100; tc.live > 0 && goal < max(gcFloor*9/10, tc.live*5/4) {
			t.Errorf("gcPercent(%d MiB): goal %d MiB is below the floor", tc.live>>20, goal>>20)
		}
	}
}

// TestTuneGC: with a small live heap, the collections after tuneGC raise
// GOGC, which is what spares a busy daemon most of its collections.
func TestTuneGC(t *testing.T) {
	if os.Getenv("GOGC") != "" {
		t.Skip("GOGC is set: tuneGC leaves it alone")
	}
	tuneGC()
	sample := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC() // runs the sentinel's finalizer, on the finalizer goroutine
		metrics.Read(sample)
		if sample[0].Value.Uint64() > 100 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GOGC is %d after collections with a small heap, want it raised", sample[0].Value.Uint64())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

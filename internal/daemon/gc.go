package daemon

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// gcFloor is the heap size the collector may let garbage grow to before it
// runs, however small the live heap.
//
// The go-sdk allocates a 32 KiB decode buffer for every JSON value it reads
// (several per MCP request), so a busy daemon allocates hundreds of MB per
// second over a live heap of a few MB. With GOGC=100 the collector then ran
// dozens of times a second, each time scanning every session's goroutine
// stacks: about a third of the daemon's CPU under 64 senders (GOGC=200, which
// cmd/parley sets for every parley process, only halved that). Letting the
// heap reach gcFloor before collecting costs at most that much memory while
// busy and nothing while idle.
const gcFloor = 64 << 20

// gcMinPercent is the GOGC past the floor. A daemon's heap outgrows the floor
// with its open sessions (about 20 KB each, most of it net/http's and the
// go-sdk's), not with its traffic, and idle sessions make little garbage: a
// collection every quarter of the live heap costs little CPU there, while the
// default 100 would let garbage double the daemon's memory (10,000 sessions:
// 930 MB of RSS instead of under 500).
const gcMinPercent = 25

var gcTuner sync.Once

// tuneGC keeps the collector's goal at max(gcFloor, the live heap and
// gcMinPercent more): it
// sets GOGC after every collection from the live heap that collection
// found. A GOGC in the environment is the operator's choice and is left alone.
func tuneGC() {
	gcTuner.Do(func() {
		if os.Getenv("GOGC") != "" {
			return
		}
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		last := 100
		var arm func()
		arm = func() {
			// A finalizer runs once its object has been found unreachable,
			// that is, after each collection; re-arming it makes a hook
			// that costs nothing between collections.
			s := new(gcSentinel)
			runtime.SetFinalizer(s, func(*gcSentinel) {
				metrics.Read(sample)
				if pct := gcPercent(sample[0].Value.Uint64()); pct != last {
					debug.SetGCPercent(pct)
					last = pct
				}
				arm()
			})
		}
		arm()
	})
}

// gcSentinel is big enough not to be batched with other tiny objects, whose
// finalizers may never run.
type gcSentinel [16]byte

// gcPercent is the GOGC that puts the next collection at gcFloor for a live
// heap of live bytes, and never below gcMinPercent.
func gcPercent(live uint64) int {
	if live == 0 {
		return 100
	}
	if live >= gcFloor*100/(100+gcMinPercent) {
		return gcMinPercent
	}
	// Rounded down to a multiple of gcMinPercent, so that small changes of
	// the live heap do not reset it after every collection.
	return max(gcMinPercent, int(gcFloor*100/live-100)/gcMinPercent*gcMinPercent)
}

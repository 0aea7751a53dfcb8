package profile

import (
	"testing"
	"time"
)

// cpuPer reports the process's CPU time per message since cpu0 (client and
// daemon together, both being in-process): on a loaded machine it moves far
// less than the wall-clock rate does.
func cpuPer(b *testing.B, cpu0 time.Duration, msgs int) {
	if msgs > 0 {
		b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(msgs), "cpu-µs/msg")
	}
}

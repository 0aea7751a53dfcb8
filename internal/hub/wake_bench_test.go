package hub_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

// BenchmarkSendWakeHub measures send->wake inside the hub, with a real SQLite
// store: the part of an agent's wake-up that is Parley's own, without MCP.
func BenchmarkSendWakeHub(b *testing.B) {
	ctx := context.Background()
	h := newHub(b, nil)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		got := make(chan time.Time, 1)
		go func() {
			if m, err := h.Wait(ctx, hub.WaitRequest{Workspace: "w", Agent: "b", Timeout: 10 * time.Second}); err != nil || m == nil {
				b.Error("wait", err)
			}
			got <- time.Now()
		}()
		for h.Waiters("w", "b") == 0 {
			time.Sleep(20 * time.Microsecond)
		}
		start := time.Now()
		if _, err := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "a", To: "b", Content: "ping"}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, (<-got).Sub(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-us")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-us")
}

package daemon

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

// BenchmarkEventFanout100 sends messages while 100 real WebSocket clients
// watch the workspace over the socket, and reports the latency from the send
// to each client's read of the event (p50, p99).
func BenchmarkEventFanout100(b *testing.B) {
	const subs = 100
	d := startDaemon(b, Config{})
	ctx := context.Background()
	h := d.Hub()
	if _, err := h.Join(ctx, hub.JoinRequest{Workspace: "fan", Name: "a"}); err != nil {
		b.Fatal(err)
	}
	type recv struct {
		id      string
		pub, at time.Time
	}
	var (
		mu    sync.Mutex
		sent  = map[string]time.Time{}
		got   = make([]recv, 0, subs*b.N)
		wg    sync.WaitGroup
		ready sync.WaitGroup
	)
	ready.Add(subs)
	for range subs {
		c := dialEvents(b, d, "?workspace=fan&kinds=message.sent", nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ready.Done()
			for {
				_, data, err := c.Read(ctx)
				now := time.Now()
				if err != nil {
					return
				}
				var e struct {
					ID   string    `json:"id"`
					Time time.Time `json:"time"`
				}
				if json.Unmarshal(data, &e) != nil {
					b.Error("bad event", string(data))
					return
				}
				mu.Lock()
				got = append(got, recv{e.ID, e.Time, now})
				mu.Unlock()
			}
		}()
	}
	ready.Wait()
	b.ResetTimer()
	for range b.N {
		// The id is known only once Send returns: stamp the time first, file
		// it under the id, and match deliveries to sends at the end.
		t0 := time.Now()
		res, err := h.Send(ctx, hub.SendRequest{Workspace: "fan", From: "a", To: "a", Content: "fan-out"})
		if err != nil {
			b.Fatal(err)
		}
		mu.Lock()
		sent[res.Message.ID] = t0
		mu.Unlock()
		// One message at a time: the figure is latency, not throughput.
		time.Sleep(2 * time.Millisecond)
	}
	b.StopTimer()
	time.Sleep(50 * time.Millisecond)
	mu.Lock()
	var fromSend, fromPub []time.Duration
	for _, r := range got {
		if t0, ok := sent[r.id]; ok {
			fromSend = append(fromSend, r.at.Sub(t0))
			fromPub = append(fromPub, r.at.Sub(r.pub))
		}
	}
	mu.Unlock()
	if want := subs * b.N; len(fromSend) != want {
		b.Errorf("deliveries: got %d, want %d", len(fromSend), want)
	}
	// From the start of Send (store write included), and from the hub's
	// publish (the event's own time stamp) to the client's read.
	reportPercentiles(b, "send", fromSend)
	reportPercentiles(b, "pub", fromPub)
}

func reportPercentiles(b *testing.B, name string, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	pct := func(p float64) float64 { return float64(ds[int(float64(len(ds)-1)*p)].Microseconds()) / 1000 }
	b.ReportMetric(pct(0.50), name+"-p50-ms")
	b.ReportMetric(pct(0.99), name+"-p99-ms")
}

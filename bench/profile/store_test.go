package profile

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/store/sqlite"
)

// BenchmarkStoreCreate64: 64 goroutines calling CreateMessage on the SQLite
// store directly, to tell the store's share of a send from the transport's.
func BenchmarkStoreCreate64(b *testing.B) {
	dir, _ := os.MkdirTemp("/tmp", "ps")
	defer os.RemoveAll(dir)
	db, err := sqlite.Open(context.Background(), filepath.Join(dir, "parley.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var seq atomic.Int64
	b.ResetTimer()
	start, cpu0 := time.Now(), processCPU()
	var wg sync.WaitGroup
	for w := 0; w < 64; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq.Load() < int64(b.N) {
				id := fmt.Sprintf("01JPROF%019d", seq.Add(1))
				m := &hub.Message{ID: id, Workspace: "p", From: "a", To: "sink", Content: "hello", Priority: hub.Normal, ThreadID: id, CreatedAt: time.Now()}
				if err := db.CreateMessage(context.Background(), m, []string{"sink"}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(seq.Load())/time.Since(start).Seconds(), "msgs/s")
	cpuPer(b, cpu0, int(seq.Load()))
}

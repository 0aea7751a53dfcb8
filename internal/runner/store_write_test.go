package runner

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"
)

// stallingStore takes no writes: each waits until its context ends, as a
// store that lost its server would.
type stallingStore struct{ Store }

func (stallingStore) PutManagedAgent(ctx context.Context, _ *Agent) error {
	<-ctx.Done()
	return ctx.Err()
}

func (stallingStore) PutRun(ctx context.Context, _ *Run) error {
	<-ctx.Done()
	return ctx.Err()
}

func (stallingStore) AppendEvents(ctx context.Context, _ []*Event) error {
	<-ctx.Done()
	return ctx.Err()
}

// TestStoreWritesHaveADeadline: the runner's bookkeeping writes give up after
// storeWriteTimeout instead of holding the agent's goroutine (and its
// save lock) for as long as the store does not answer.
func TestStoreWritesHaveADeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &Runner{store: stallingStore{}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
		st := &agent{rec: Agent{ID: "a1"}}
		start := time.Now()
		for what, err := range map[string]error{"agent": r.saveAgent(st), "run": r.saveRun(st, &Run{AgentID: "a1", Seq: 1})} {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("writing the %s to a store that does not answer: got %v, want the deadline", what, err)
			}
		}
		r.emit(st, &Event{Kind: EvNote, Text: "x"})
		if got := time.Since(start); got != 3*storeWriteTimeout {
			t.Errorf("the writes took %v, want %v: one deadline each, in turn", got, 3*storeWriteTimeout)
		}
		if st.nextEvent != 0 {
			t.Errorf("an event the store did not take counts as appended (seq %d)", st.nextEvent)
		}
	})
}

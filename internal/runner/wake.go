package runner

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/hub"
)

// onHubEvent notes the recipients of every message. It runs on the
// publisher's goroutine, so it only records and signals: never blocks.
func (r *Runner) onHubEvent(e hub.Event) {
	if e.Kind != hub.EventMessageSent || len(e.Recipients) == 0 {
		return
	}
	r.wakeMu.Lock()
	for _, n := range e.Recipients {
		r.wakeSet[e.Workspace+"\x00"+n] = true
	}
	r.wakeMu.Unlock()
	select {
	case r.wakeCh <- struct{}{}:
	default:
	}
}

// markWake asks the wake loop to look at the inbox of ws/name.
func (r *Runner) markWake(ws, name string) {
	r.wakeMu.Lock()
	r.wakeSet[ws+"\x00"+name] = true
	r.wakeMu.Unlock()
	select {
	case r.wakeCh <- struct{}{}:
	default:
	}
}

// wakeLoop is the one goroutine that turns mail into turns, so two wake-ups
// of one agent never race for its inbox.
func (r *Runner) wakeLoop() {
	defer r.wg.Done()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-r.wakeCh:
		}
		r.wakeMu.Lock()
		keys := r.wakeSet
		r.wakeSet = map[string]bool{}
		r.wakeMu.Unlock()
		for k := range keys {
			ws, name, _ := strings.Cut(k, "\x00")
			r.wake(ws, name)
		}
	}
}

// wake starts a turn for ws/name with its unread messages if it is a managed
// agent that is idle and wants to be woken.
func (r *Runner) wake(ws, name string) {
	r.mu.Lock()
	st, err := r.lookup("", ws, name)
	ok := err == nil && !r.closed && st.rec.AutoWake && !st.rec.Exited && st.run == nil && len(st.queue) == 0
	r.mu.Unlock()
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.ctx, 10*time.Second)
	defer cancel()
	msgs, _, err := r.hub.Check(ctx, ws, name, wakeBatch)
	if err != nil {
		r.log.Warn("wake: read inbox", "agent", name, "err", err)
		return
	}
	if len(msgs) == 0 {
		return
	}
	if _, err := r.enqueue(st, wakePrompt(msgs), "message"); err != nil {
		r.log.Warn("wake: queue turn", "agent", name, "err", err)
		return
	}
	r.log.Info("woke managed agent for new messages", "agent", name, "messages", len(msgs))
}

// wakePrompt states the messages a wake-up turn is about, in inbox order
// (critical first).
func wakePrompt(msgs []*hub.Message) string {
	var b strings.Builder
	if len(msgs) == 1 {
		b.WriteString("You have a new message on the Parley message bus.\n")
	} else {
		fmt.Fprintf(&b, "You have %d new messages on the Parley message bus, most urgent first.\n", len(msgs))
	}
	for i, m := range msgs {
		b.WriteString("\n")
		if len(msgs) > 1 {
			fmt.Fprintf(&b, "--- message %d of %d ---\n", i+1, len(msgs))
		}
		fmt.Fprintf(&b, "From: %s\nPriority: %s\nMessage ID: %s\nSent: %s\n", m.From, m.Priority, m.ID, api.FormatTime(m.CreatedAt))
		if m.ReplyTo != "" {
			fmt.Fprintf(&b, "In reply to: %s\n", m.ReplyTo)
		}
		b.WriteString("\n")
		b.WriteString(m.Content)
		b.WriteString("\n")
		if len(m.Payload) > 0 {
			fmt.Fprintf(&b, "Payload: %s\n", m.Payload)
		}
	}
	b.WriteString("\nThe messages are marked read. Reply with the send_message tool (reply_to the message id) if an answer is needed.\n")
	return b.String()
}

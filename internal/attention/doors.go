package attention

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/parley-dev/parley/internal/door"
	"github.com/parley-dev/parley/internal/hub"
)

// The doors of Qwen Code and opencode: what each says of a letter, and
// how the doorman follows it.

// qwenReplies is the daemon's one inbox for Qwen Code's receipts.
type qwenReplies struct {
	once sync.Once
	l    *door.QwenListener
}

func (d *Doorman) qwenListener() *door.QwenListener {
	if d.o.NoReplies {
		return nil
	}
	d.qwen.once.Do(func() {
		l, err := door.ListenQwen("")
		if err != nil {
			d.log.Debug("doorman: no Qwen Code receipts", "err", err)
			return
		}
		d.qwen.l = l
	})
	return d.qwen.l
}

// closeQwen closes the receipts inbox, if it opened.
func (d *Doorman) closeQwen() {
	d.qwen.once.Do(func() {}) // none opens after
	if d.qwen.l != nil {
		d.qwen.l.Close()
	}
}

// qwenTranscriptPoll is how often the transcript of a session that took a
// letter is read for the turn that carries it.
const qwenTranscriptPoll = 200 * time.Millisecond

// writeQwen writes a letter into a Qwen Code session's inbox; the watch
// follows its receipts and the session's transcript.
func (d *Doorman) writeQwen(ctx context.Context, k key, id, text string, dr *hub.SessionDoor) (func(context.Context), error) {
	q := &door.Qwen{Record: dr.Address}
	sent, err := q.Write(ctx, door.QwenLetter{Text: text, Reply: d.qwenListener()})
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) { d.watchQwen(ctx, k, id, dr, sent) }, nil
}

// watchQwen follows a Qwen Code letter until its fate is known: its turn
// shows in the session's transcript (seen); held for the session's person
// (the next letter waits, the other wake paths take over), then delivered
// (released) or denied (declined) or expired (bounced); refused (bounced,
// the door closes); dropped or misaddressed (bounced). "delivered" alone
// means queued for the model, not read: a letter delivered whose turn does
// not show within SeenTimeout is unconfirmed.
func (d *Doorman) watchQwen(ctx context.Context, k key, id string, dr *hub.SessionDoor, sent *door.QwenSent) {
	defer sent.Receipt.Close()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	carried := make(chan error, 1)
	go func() { carried <- sent.Carried(cctx, dr.Address, id, qwenTranscriptPoll) }()
	var receipts <-chan door.Receipt
	if sent.Receipt != nil {
		receipts = sent.Receipt.C
	}
	bound := time.NewTimer(d.o.SeenTimeout)
	defer bound.Stop()
	held, delivered := false, false
	setHeld := func(v bool) {
		held = v
		d.mu.Lock()
		if st := d.agents[k]; st != nil && st.letter != nil && st.letter.id == id {
			st.letter.held = v
		}
		d.mu.Unlock()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case err := <-carried:
			if err == nil {
				d.mark(k, id, hub.LetterChange{Mark: hub.MarkSeen})
			}
			d.done(k, id)
			return
		case <-bound.C:
			if held {
				continue // the person decides; Qwen Code's hold expiry says when it ends
			}
			if delivered {
				d.mark(k, id, hub.LetterChange{Mark: hub.MarkUnconfirmed, Note: "the Qwen Code session queued the letter and no turn of it carried it"})
			}
			d.done(k, id)
			return
		case r, ok := <-receipts:
			if !ok {
				receipts = nil
				continue
			}
			switch r.Status {
			case door.ReceiptHeld:
				if !held {
					setHeld(true)
					d.mark(k, id, hub.LetterChange{Mark: hub.MarkHeld, Note: qwenHeldNote(r)})
				}
			case door.ReceiptDelivered:
				delivered = true
				if held {
					setHeld(false)
					d.mark(k, id, hub.LetterChange{Mark: hub.MarkReleased})
					bound.Reset(d.o.SeenTimeout)
				}
			case door.ReceiptDenied:
				d.mark(k, id, hub.LetterChange{Mark: hub.MarkDeclined, Note: "declined in the Qwen Code session: " + r.Reason})
				d.done(k, id)
				return
			case door.ReceiptRefused:
				d.mark(k, id, hub.LetterChange{Mark: hub.MarkBounced, Note: "the Qwen Code session refuses letters (agents.crossSessionInbound is refuse): " + r.Reason})
				d.hub.CloseDoor(context.WithoutCancel(ctx), k.ws, dr.ID, hub.DoorClosedRefused)
				d.done(k, id)
				return
			case door.ReceiptExpired, door.ReceiptDropped, door.ReceiptMisaddressed:
				what := map[string]string{
					door.ReceiptExpired:      "the Qwen Code session let the letter expire unread: ",
					door.ReceiptDropped:      "the Qwen Code session dropped the letter: ",
					door.ReceiptMisaddressed: "the Qwen Code session at the door's address is another one now: ",
				}[r.Status]
				d.mark(k, id, hub.LetterChange{Mark: hub.MarkBounced, Note: what + r.Reason})
				d.done(k, id)
				return
			}
		}
	}
}

// qwenHeldNote is why a Qwen Code session holds a letter, and how to let
// letters in.
func qwenHeldNote(r door.Receipt) string {
	return r.Reason + " Release it in the session (/peers), or set agents.crossSessionInbound to \"accept\" in the user's Qwen Code settings (~/.qwen/settings.json; `parley init qwen` does)."
}

// writeOpencode adds a letter to the opencode instance's session; the
// watch follows the instance's events until the model answers it.
func (d *Doorman) writeOpencode(ctx context.Context, k key, id, text string, dr *hub.SessionDoor) (func(context.Context), error) {
	o := &door.Opencode{URL: dr.Address, Directory: dr.Session}
	p, err := o.Write(ctx, text)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) {
		defer p.Close()
		cctx, cancel := context.WithTimeout(ctx, d.o.SeenTimeout)
		defer cancel()
		switch err := p.Carried(cctx); {
		case err == nil:
			d.mark(k, id, hub.LetterChange{Mark: hub.MarkSeen})
		case ctx.Err() != nil:
			return
		case errors.Is(err, context.DeadlineExceeded):
			d.mark(k, id, hub.LetterChange{Mark: hub.MarkUnconfirmed, Note: "the opencode session took the letter and its model has not answered it"})
		case door.IsGone(err):
			d.hub.CloseDoor(context.WithoutCancel(ctx), k.ws, dr.ID, hub.DoorClosedGone)
		default:
			d.mark(k, id, hub.LetterChange{Mark: hub.MarkUnconfirmed, Note: "opencode: " + err.Error()})
		}
		d.done(k, id)
	}, nil
}

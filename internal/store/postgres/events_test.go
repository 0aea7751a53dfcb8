package postgres

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/hub"
)

// fill sets every field reachable from v to a distinct non-zero value.
func fill(t *testing.T, v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprint("s", *n))
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, v.Elem(), n)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(t, k, n)
		fill(t, e, n)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Slice:
		if v.Type() == reflect.TypeFor[json.RawMessage]() {
			v.SetBytes([]byte(fmt.Sprintf(`{"k":%d}`, *n)))
			return
		}
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fill(t, s.Index(i), n)
		}
		v.Set(s)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, *n*1000, time.UTC)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(t, v.Field(i), n)
			}
		}
	default:
		t.Fatalf("fill: %s of kind %s: teach the test (and the event wire) this type", v.Type(), v.Kind())
	}
}

// TestEventWireRoundTrip: every field of an event survives the trip between
// daemons. A field added to hub.Event (or to what it carries) fails here
// until events.go carries it.
func TestEventWireRoundTrip(t *testing.T) {
	var e hub.Event
	n := 0
	fill(t, reflect.ValueOf(&e).Elem(), &n)
	e.Remote = false // the receiver's to set
	// A door's token and owner are its session's credentials: they stay
	// with the daemon that has the door.
	e.SessionDoor.Token, e.SessionDoor.Owner = "", ""
	e.Kind = hub.EventMessageSent
	got, cut, err := decodeEvent(encodeEvent(e))
	if err != nil || cut {
		t.Fatalf("decode: %v (cut %v)", err, cut)
	}
	if !reflect.DeepEqual(got, e) {
		a, _ := json.MarshalIndent(e, "", " ")
		b, _ := json.MarshalIndent(got, "", " ")
		t.Fatalf("round trip changed the event:\nsent %s\ngot  %s", a, b)
	}
	// A copy's event names its message; the text went with message.sent.
	e.Kind = hub.EventMessageRead
	got, _, _ = decodeEvent(encodeEvent(e))
	if got.Message != nil || got.MessageID != e.MessageID {
		t.Errorf("message.read: got message %v, id %q; want no message, id %q", got.Message, got.MessageID, e.MessageID)
	}
}

// TestEventCut: an event too large for a notification travels without the
// message's text (read from the store on arrival), or without its detail.
func TestEventCut(t *testing.T) {
	m := &hub.Message{ID: "01M", Workspace: "ws", From: "a", Content: strings.Repeat("x", 100<<10), Metadata: map[string]string{"k": "v"}}
	b := encodeEvent(hub.Event{Kind: hub.EventMessageSent, Workspace: "ws", Message: m, Recipients: []string{"b"}})
	if len(b) > maxEvent {
		t.Fatalf("encoded: %d bytes, want at most %d", len(b), maxEvent)
	}
	got, cut, err := decodeEvent(b)
	if err != nil || !cut || got.Message.ID != "01M" || got.Message.Content != "" || !slices.Equal(got.Recipients, []string{"b"}) {
		t.Fatalf("cut message: got %+v cut=%v err=%v; want message 01M without text, to b, marked cut", got, cut, err)
	}
	big := json.RawMessage(`{"input":"` + strings.Repeat("y", 20<<10) + `"}`)
	b = encodeEvent(hub.Event{Kind: "permission.requested", Workspace: "ws", Agent: "a", Detail: big})
	if got, _, err = decodeEvent(b); err != nil || len(b) > maxEvent || got.Detail != nil || got.Agent != "a" {
		t.Fatalf("large detail: %d bytes, got %+v, %v; want the event without its detail", len(b), got, err)
	}
}

// TestEventPayloadsPack: many events go in few notifications, each under
// PostgreSQL's limit, in order.
func TestEventPayloadsPack(t *testing.T) {
	var evs [][]byte
	for i := range 500 {
		evs = append(evs, encodeEvent(hub.Event{Kind: hub.EventMessageSent, Workspace: "ws",
			Message: &hub.Message{ID: fmt.Sprint(i), Content: strings.Repeat("z", i*7)}}))
	}
	ps := eventPayloads("o", evs)
	var ids []string
	for _, p := range ps {
		if len(p) > maxPayload {
			t.Fatalf("a payload of %d bytes, over %d", len(p), maxPayload)
		}
		var w wire
		if err := json.Unmarshal([]byte(p), &w); err != nil || w.Origin != "o" {
			t.Fatalf("payload %q: %v", p[:80], err)
		}
		for _, raw := range w.Events {
			e, _, err := decodeEvent(raw)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, e.Message.ID)
		}
	}
	if len(ids) != 500 || ids[0] != "0" || ids[499] != "499" || !slices.IsSortedFunc(ids, func(a, b string) int { return len(a) - len(b) }) {
		t.Fatalf("events out: %d, first %s, last %s; want 500 in order", len(ids), ids[0], ids[len(ids)-1])
	}
	if len(ps) > len(evs)/2 {
		t.Errorf("%d notifications for %d events: want them packed", len(ps), len(evs))
	}
}

// TestSendEventPayloads: a batch of sends tells the others of each message
// and of each copy handed straight to a wait.
func TestSendEventPayloads(t *testing.T) {
	db := &DB{origin: "o"}
	msg := func(id, ws string) *hub.Message { return &hub.Message{ID: id, Workspace: ws, From: "a"} }
	handed := func(r string) []hub.Handoff { return []hub.Handoff{{Recipient: r, Reader: "s1"}} }
	ps := db.sendEventPayloads([]*pendingSend{
		{m: msg("1", "w1"), recipients: []string{"bob", "carol"}, handed: handed("bob")},
		{m: msg("2", "w2"), recipients: []string{"dave"}},
	})
	var got []string
	for _, p := range ps {
		var w wire
		json.Unmarshal([]byte(p), &w)
		for _, raw := range w.Events {
			e, _, _ := decodeEvent(raw)
			got = append(got, fmt.Sprintf("%s %s %s %v %s", e.Kind, e.Workspace, e.Agent, e.Recipients, e.Reader))
		}
	}
	want := []string{"message.sent w1 a [bob carol] ", "message.delivered w1 bob [] s1", "message.sent w2 a [dave] "}
	if !slices.Equal(got, want) {
		t.Errorf("events of the batch:\ngot  %q\nwant %q", got, want)
	}
}

// BenchmarkEventDecode is what a daemon spends on each event another daemon
// announces, before its hub relays it: a typical message.sent (a short
// message) and the copy's two events, in one notification.
func BenchmarkEventDecode(b *testing.B) {
	m := &hub.Message{ID: "01KQ0000000000000000000000", Workspace: "org", From: "a0001", To: "a0002",
		Content: "org 12345: please look at the failing test in internal/store", Priority: hub.Normal,
		ThreadID: "01KQ0000000000000000000000", CreatedAt: time.Now().UTC(), Origin: hub.Origin{Role: "dev", Host: "vm", Door: hub.DoorCLI}}
	evs := [][]byte{
		encodeEvent(hub.Event{Kind: hub.EventMessageSent, Workspace: "org", Time: m.CreatedAt, Agent: m.From, Message: m, Recipients: []string{"a0002"}}),
		encodeEvent(hub.Event{Kind: hub.EventMessageDelivered, Workspace: "org", Time: m.CreatedAt, Agent: "a0002", MessageID: m.ID, Reader: "r-1", Count: 1}),
		encodeEvent(hub.Event{Kind: hub.EventMessageRead, Workspace: "org", Time: m.CreatedAt, Agent: "a0002", MessageID: m.ID, Count: 1}),
	}
	payload := []byte(eventPayloads("origin", evs)[0])
	b.SetBytes(int64(len(payload)))
	b.ReportAllocs()
	for b.Loop() {
		var w wire
		if err := json.Unmarshal(payload, &w); err != nil {
			b.Fatal(err)
		}
		for _, raw := range w.Events {
			if _, _, err := decodeEvent(raw); err != nil {
				b.Fatal(err)
			}
		}
	}
}

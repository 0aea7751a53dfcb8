package ops

import (
	"context"
	"reflect"
	"testing"

	"github.com/parley-dev/parley/internal/api"
)

// TestEveryOpDeclared: every operation (a method of *Ops that runs for a
// *Caller) says whether an agent token may call it, and every declaration
// names an operation. A new operation fails here until someone decides.
func TestEveryOpDeclared(t *testing.T) {
	ctxType := reflect.TypeFor[context.Context]()
	callerType := reflect.TypeFor[*Caller]()
	ops := map[string]bool{}
	typ := reflect.TypeFor[*Ops]()
	for i := range typ.NumMethod() {
		m := typ.Method(i)
		ft := m.Type // receiver first
		if ft.NumIn() < 3 || ft.In(1) != ctxType || ft.In(2) != callerType {
			continue
		}
		ops[m.Name] = true
		if _, ok := agentToken[m.Name]; !ok {
			t.Errorf("operation %s is not in agentToken: declare whether an agent token may call it", m.Name)
		}
	}
	if len(ops) < 40 {
		t.Fatalf("found %d operations on *Ops, want the 40 or more there are: is the signature test wrong?", len(ops))
	}
	for name := range agentToken {
		if !ops[name] {
			t.Errorf("agentToken declares %s, which is no operation of *Ops", name)
		}
	}
}

func TestAgentMay(t *testing.T) {
	o := New(nil, nil)
	for _, c := range []struct {
		name string
		fn   any
		want bool
	}{
		{"Send", o.Send, true},
		{"Ack", o.Ack, true},
		{"ReservePaths", o.ReservePaths, true},
		{"Purge", o.Purge, false},
		{"KillAgent", o.KillAgent, false},
		{"Respond", o.Respond, false},
		{"a closure over Send", func(ctx context.Context, c *Caller, in api.SendRequest) (api.SendResult, error) {
			return o.Send(ctx, c, in)
		}, false},
		{"nil", nil, false},
	} {
		if got := AgentMay(c.fn); got != c.want {
			t.Errorf("AgentMay(%s) = %v, want %v", c.name, got, c.want)
		}
	}
}

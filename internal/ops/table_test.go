package ops

import (
	"context"
	"reflect"
	"testing"
)

// agentToken is the table's access, by operation name, for the tests.
func agentToken() map[string]bool {
	m := map[string]bool{}
	for _, op := range new(Ops).Table() {
		m[op.Name] = op.Access == Agent
	}
	return m
}

// TestTableHasEveryOp: every operation (a method of *Ops that runs for a
// *Caller) is in the table once, so that it has an access, and every entry
// names an operation. A new operation fails here until someone decides who
// may call it.
func TestTableHasEveryOp(t *testing.T) {
	ctxType := reflect.TypeFor[context.Context]()
	callerType := reflect.TypeFor[*Caller]()
	methods := map[string]bool{}
	typ := reflect.TypeFor[*Ops]()
	for i := range typ.NumMethod() {
		m := typ.Method(i)
		ft := m.Type // receiver first
		if ft.NumIn() < 3 || ft.In(1) != ctxType || ft.In(2) != callerType {
			continue
		}
		methods[m.Name] = true
	}
	if len(methods) < 40 {
		t.Fatalf("found %d operations on *Ops, want the 40 or more there are: is the signature test wrong?", len(methods))
	}
	seen := map[string]bool{}
	routes := map[string]string{}
	for _, op := range new(Ops).Table() {
		if seen[op.Name] {
			t.Errorf("the table lists %s twice", op.Name)
		}
		seen[op.Name] = true
		if !methods[op.Name] {
			t.Errorf("the table lists %s, which is no operation of *Ops", op.Name)
		}
		if other, ok := routes[op.Route]; ok && op.Route != "" {
			t.Errorf("%s and %s share the route %s", op.Name, other, op.Route)
		}
		routes[op.Route] = op.Name
	}
	for name := range methods {
		if !seen[name] {
			t.Errorf("operation %s is not in the table: add it, and say who may call it", name)
		}
	}
}

// TestAccess spot-checks the table's access against what the operations do.
func TestAccess(t *testing.T) {
	o := new(Ops)
	for name, want := range map[string]Access{
		"Send": Agent, "Ack": Agent, "ReservePaths": Agent, "Health": Agent,
		"Purge": Admin, "KillAgent": Admin, "Respond": Admin, "Join": Admin, "CreateToken": Admin,
	} {
		if got := o.Op(name).Access; got != want {
			t.Errorf("%s: access %v, want %v", name, got, want)
		}
	}
}

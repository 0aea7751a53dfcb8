package ops

import (
	"context"
	"reflect"
	"strings"
	"testing"
)

// agentToken is the table's access, by operation name, for the tests.
func agentToken() map[string]bool {
	m := map[string]bool{}
	for _, op := range Table() {
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
	for _, op := range Table() {
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
	for _, tc := range []struct {
		op   Op
		want Access
	}{
		{Send, Agent}, {Ack, Agent}, {ReservePaths, Agent}, {Health, Agent},
		{Purge, Admin}, {KillAgent, Admin}, {Respond, Admin}, {Join, Admin}, {CreateToken, Admin},
	} {
		if tc.op.Access != tc.want {
			t.Errorf("%s: access %v, want %v", tc.op.Name, tc.op.Access, tc.want)
		}
	}
}

// TestEffects holds what the table says an operation does to the state
// (MCP's tool annotations come from it) to what its route says, and spots
// the rest: a GET reads only; a DELETE destroys; nothing reads only and
// destroys; reading one's own mail (check, wait) reads, for clients to run
// it without asking.
func TestEffects(t *testing.T) {
	for _, op := range Table() {
		method, _, _ := strings.Cut(op.Route, " ")
		switch {
		case method == "GET" && !op.ReadOnly:
			t.Errorf("%s is GET %s but not read-only", op.Name, op.Route)
		case method == "DELETE" && !op.Destructive:
			t.Errorf("%s is DELETE %s but not destructive", op.Name, op.Route)
		case op.ReadOnly && (op.Destructive || !op.Idempotent):
			t.Errorf("%s: read-only, yet destructive or not idempotent", op.Name)
		}
	}
	for _, tc := range []struct {
		op                                           Op
		readOnly, destructive, idempotent, openWorld bool
	}{
		{Peek, true, false, true, false},
		{Whoami, true, false, true, false},
		{Check, true, false, true, false},
		{Wait, true, false, true, false},
		{ClaimTask, false, false, false, false},
		{Send, false, false, false, false},
		{Ack, false, false, true, false},
		{KillAgent, false, true, true, false},
		{Clear, false, true, true, false},
		{CallTool, false, false, false, true},
	} {
		op := tc.op
		if op.ReadOnly != tc.readOnly || op.Destructive != tc.destructive || op.Idempotent != tc.idempotent || op.OpenWorld != tc.openWorld {
			t.Errorf("%s: read-only %v, destructive %v, idempotent %v, open world %v; want %v %v %v %v", op.Name,
				op.ReadOnly, op.Destructive, op.Idempotent, op.OpenWorld, tc.readOnly, tc.destructive, tc.idempotent, tc.openWorld)
		}
	}
}

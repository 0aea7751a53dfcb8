package client_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/client"
	"github.com/parley-dev/parley/internal/ops"
)

// TestEveryPathIsARoute calls every method of the client against a server
// that knows only the routes of ops' table: a path the client names by
// hand that is no operation's (a typo, a route renamed on one side) answers
// 404 here, before a user meets it.
func TestEveryPathIsARoute(t *testing.T) {
	mux := http.NewServeMux()
	var mu sync.Mutex
	served := map[string]string{} // by pattern: the operation
	for _, op := range ops.Table() {
		if op.Route == "" {
			continue
		}
		method, path, _ := strings.Cut(op.Route, " ")
		pattern := method + " " + api.Prefix + path
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			served[pattern] = op.Name
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte("{}"))
		})
	}
	var missed []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern == "" {
			mu.Lock()
			missed = append(missed, r.Method+" "+r.URL.Path)
			mu.Unlock()
			http.Error(w, `{"error":{"kind":"not_found","message":"no route"}}`, http.StatusNotFound)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	defer srv.Close()
	c, err := client.NewRemote(srv.URL, "ptk_test", nil)
	if err != nil {
		t.Fatal(err)
	}
	c = c.As("w", "a")
	// Not operations: the daemon's own start, and the event stream (a
	// WebSocket of its own, not a table route).
	notOps := map[string]bool{"EnsureDaemon": true, "StartDaemon": true, "Events": true}
	v := reflect.ValueOf(c)
	ctxType := reflect.TypeFor[context.Context]()
	called := 0
	for i := range v.NumMethod() {
		m, mt := v.Method(i), v.Type().Method(i)
		if notOps[mt.Name] || m.Type().NumIn() == 0 || m.Type().In(0) != ctxType {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		args := []reflect.Value{reflect.ValueOf(ctx)}
		for j := 1; j < m.Type().NumIn(); j++ {
			args = append(args, sample(m.Type().In(j)))
		}
		if m.Type().IsVariadic() {
			m.CallSlice(args)
		} else {
			m.Call(args)
		}
		cancel()
		called++
	}
	if called < 60 {
		t.Fatalf("called %d methods of the client, want the 60 or more it has", called)
	}
	for _, p := range missed {
		t.Errorf("the client requests %s, which is no route of ops' table", p)
	}
	t.Logf("%d methods called, %d routes served, %d missed", called, len(served), len(missed))
}

// sample is a value of t that makes a path whole: a name for a string (a
// path segment, or a request's field that goes in one), a number, a list of
// one, an empty JSON value.
func sample(t reflect.Type) reflect.Value {
	switch t.Kind() {
	case reflect.Struct:
		v := reflect.New(t).Elem()
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && f.Type.Kind() == reflect.String {
				v.Field(i).SetString("x")
			}
		}
		return v
	case reflect.String:
		return reflect.ValueOf("x").Convert(t)
	case reflect.Int:
		return reflect.ValueOf(1).Convert(t)
	case reflect.Bool:
		return reflect.ValueOf(true)
	case reflect.Slice:
		if t == reflect.TypeFor[json.RawMessage]() {
			return reflect.ValueOf(json.RawMessage("{}"))
		}
		s := reflect.MakeSlice(t, 1, 1)
		s.Index(0).Set(sample(t.Elem()))
		return s
	}
	return reflect.Zero(t)
}

package hub_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/parley-dev/parley/internal/hub"
)

func TestParseSearchQuery(t *testing.T) {
	tests := []struct {
		in   string
		want []hub.SearchTerm
	}{
		{"deploy", []hub.SearchTerm{{Words: []string{"deploy"}}}},
		{"  Deploy   GATEWAY ", []hub.SearchTerm{{Words: []string{"deploy"}}, {Words: []string{"gateway"}}}},
		{`"schema migration" fix`, []hub.SearchTerm{{Words: []string{"schema", "migration"}}, {Words: []string{"fix"}}}},
		{"migrat*", []hub.SearchTerm{{Words: []string{"migrat"}, Prefix: true}}},
		{"user_id main.go", []hub.SearchTerm{{Words: []string{"user", "id"}}, {Words: []string{"main", "go"}}}},
		{`"unclosed phrase`, []hub.SearchTerm{{Words: []string{"unclosed", "phrase"}}}},
		{"OR AND NOT (", []hub.SearchTerm{{Words: []string{"or"}}, {Words: []string{"and"}}, {Words: []string{"not"}}}},
		{"résumé", []hub.SearchTerm{{Words: []string{"résumé"}}}},
	}
	for _, tt := range tests {
		got, err := hub.ParseSearchQuery(tt.in)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseSearchQuery(%q): got %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "   ", `"" * -- ()`, strings.Repeat("a ", 40), strings.Repeat("x", hub.MaxSearchQuery+1), "\xff"} {
		if _, err := hub.ParseSearchQuery(bad); hub.KindOf(err) != hub.Invalid {
			t.Errorf("ParseSearchQuery(%.20q): got %v, want invalid", bad, err)
		}
	}
}

func TestHubSearch(t *testing.T) {
	ctx := context.Background()
	h := newHub(t, nil)
	join(t, h, "w", "alice", "dev")
	join(t, h, "w", "bob", "dev")
	join(t, h, "w", "carol", "dev")
	if _, err := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "alice", To: "bob", Content: "the cache eviction bug"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Send(ctx, hub.SendRequest{Workspace: "w", From: "bob", To: "@dev", Content: "cache is fixed"}); err != nil {
		t.Fatal(err)
	}
	for viewer, want := range map[string]int{"": 2, "alice": 2, "bob": 2, "carol": 1} {
		hits, err := h.Search(ctx, hub.SearchRequest{Workspace: "w", Viewer: viewer, Query: "cache"})
		if err != nil || len(hits) != want {
			t.Errorf("viewer %q: got %d hits, %v; want %d", viewer, len(hits), err, want)
		}
	}
	if _, err := h.Search(ctx, hub.SearchRequest{Workspace: "w", Query: "cache", Limit: 1000}); hub.KindOf(err) != hub.Invalid {
		t.Errorf("limit 1000: got %v, want invalid", err)
	}
}

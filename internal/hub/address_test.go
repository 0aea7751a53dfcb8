package hub

import (
	"strings"
	"testing"
)

func TestParseAddress(t *testing.T) {
	tests := []struct {
		in      string
		want    Address
		wantErr bool
	}{
		{in: "bob", want: Address{Kind: AddrName, Name: "bob"}},
		{in: "  bob ", want: Address{Kind: AddrName, Name: "bob"}},
		{in: "@everyone", want: Address{Kind: AddrEveryone, Name: "everyone"}},
		{in: "@reviewers", want: Address{Kind: AddrGroupRole, Name: "reviewers"}},
		{in: "@group:reviewers", want: Address{Kind: AddrGroup, Name: "reviewers"}},
		{in: "@role:reviewer", want: Address{Kind: AddrRole, Name: "reviewer"}},
		{in: "agent:planner:abc123", want: Address{Kind: AddrComposite, Role: "planner", Name: "abc123"}},
		{in: "human:alice", want: Address{Kind: AddrName, Name: "human:alice"}},
		{in: "human:", wantErr: true},
		{in: "human:a:b", wantErr: true},
		{in: "", wantErr: true},
		{in: "   ", wantErr: true},
		{in: "@", wantErr: true},
		{in: "agent:planner", wantErr: true},
		{in: "agent:planner:", wantErr: true},
		{in: "agent:a:b:c", wantErr: true},
		{in: "bad\x00name", wantErr: true},
		{in: strings.Repeat("n", 10000), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseAddress(tt.in)
			if tt.wantErr {
				if err == nil || KindOf(err) != Invalid {
					t.Errorf("ParseAddress(%q): got %+v, %v; want an invalid-address error", tt.in, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ParseAddress(%q): got %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
		})
	}
}

// FuzzParseAddress: any input parses or gives an Invalid error, never a panic;
// what parses renders back to an address that parses to the same thing.
func FuzzParseAddress(f *testing.F) {
	for _, s := range []string{"bob", "@everyone", "@team", "@group:team", "@role:dev", "@role:", "agent:r:h", "agent::h", " @x ", "@@", "agent:", "\u00e9l\u00e8ve", "a b", "human:ann", "human::"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		a, err := ParseAddress(in)
		if err != nil {
			if KindOf(err) != Invalid {
				t.Fatalf("ParseAddress(%q): error of kind %v, want invalid: %v", in, KindOf(err), err)
			}
			return
		}
		if a.Kind == AddrName && (strings.HasPrefix(a.Name, "@") || strings.HasPrefix(a.Name, "agent:") ||
			strings.Contains(a.Name, ":") && !strings.HasPrefix(a.Name, HumanPrefix)) {
			t.Fatalf("ParseAddress(%q): plain name %q looks like another kind", in, a.Name)
		}
		b, err := ParseAddress(a.String())
		if err != nil || b != a {
			t.Fatalf("round trip of %q: %+v renders %q, which parses to %+v, %v", in, a, a.String(), b, err)
		}
	})
}

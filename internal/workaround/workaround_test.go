package workaround

import (
	"slices"
	"testing"
)

func TestParse(t *testing.T) {
	for v, want := range map[string][]string{
		"":                        nil,
		"-typed":                  {"typed"},
		"-typed, -quickargs":      {"typed", "quickargs"},
		"typed,-stream,,+gctuner": {"stream"}, // only "-name" turns one off
		" -typed ,-gctuner  ":     {"typed", "gctuner"},
	} {
		if got := parse(v); !slices.Equal(got, want) {
			t.Errorf("parse(%q) = %q, want %q", v, got, want)
		}
	}
}

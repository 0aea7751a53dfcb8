package profile

import (
	"slices"
	"strings"
	"testing"
)

func TestRegistrySettle(t *testing.T) {
	r := NewRegistry(&Host{})
	r.Register("manager", Manager)
	if _, err := r.Known([]string{"native", "bogus"}); err == nil || !strings.Contains(err.Error(), `unknown profile "bogus": want one of agentmail, identity, lean, manager, native, sidechat`) {
		t.Errorf("Known with an unknown profile: %v", err)
	}
	known, err := r.Known([]string{" sidechat", "", "native", "sidechat"})
	if err != nil || !slices.Equal(known, []string{"sidechat", "native"}) {
		t.Errorf("Known = %v, %v; want each once, in order", known, err)
	}
	for _, c := range []struct {
		known     []string
		renamable bool
		want      []string
	}{
		{nil, false, []string{"native"}},
		{nil, true, []string{"identity", "native"}},
		{[]string{"lean"}, true, []string{"identity", "lean"}},
		{[]string{"sidechat"}, true, []string{"sidechat"}},
		{[]string{"sidechat", "identity"}, false, []string{"identity", "sidechat"}},
	} {
		got, err := r.Settle(c.known, c.renamable)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("Settle(%v, %v) = %v, %v; want %v", c.known, c.renamable, got, err, c.want)
		}
	}
	if _, err := r.Settle([]string{"native", "manager"}, false); err == nil || !strings.Contains(err.Error(), "profiles manager and native both define the tool list_agents") {
		t.Errorf("Settle(native, manager): %v; want the clash named", err)
	}
}

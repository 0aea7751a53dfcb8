package ops

import (
	"slices"
	"testing"
)

// TestReadRuleCoversReads: every operation open to agent tokens says whether
// it reads messages (and then how it applies the read rule) or not, and
// nothing else is listed. An open operation added without a decision fails
// here, as TestEveryOpDeclared fails for one without an access declaration.
func TestReadRuleCoversReads(t *testing.T) {
	agentToken := agentToken()
	for name, open := range agentToken {
		_, reads := readRule[name]
		none := slices.Contains(readsNone, name)
		switch {
		case open && reads == none:
			t.Errorf("operation %s is open to agent tokens: list it in readRule (it reads messages) or in readsNone (it does not), once", name)
		case !open && (reads || none):
			t.Errorf("operation %s is closed to agent tokens; readRule and readsNone list only open ones", name)
		}
	}
	for name := range readRule {
		if _, ok := agentToken[name]; !ok {
			t.Errorf("readRule lists %s, which is no operation", name)
		}
	}
	for _, name := range readsNone {
		if _, ok := agentToken[name]; !ok {
			t.Errorf("readsNone lists %s, which is no operation", name)
		}
	}
}

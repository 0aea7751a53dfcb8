package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/parley-dev/parley/internal/door"
)

// qwen is what `parley init qwen` changes: the project's .qwen/settings.json
// gets mcpServers.parley; the user's $QWEN_HOME/settings.json gets
// agents.crossSessionInbound "accept", without which Qwen Code holds every
// letter of Parley's for review (a letter never claims a review class, and
// a project's settings may only tighten the inbound policy).
func (p initPlan) qwen() ([]fileChange, error) {
	changes, err := p.jsonServer(filepath.Join(p.root, ".qwen", "settings.json"), false)
	if err != nil {
		return nil, err
	}
	user, err := qwenUserSettings()
	if err != nil {
		return nil, err
	}
	m, old, exists, err := loadJSONObject("", user)
	if err != nil {
		return nil, err
	}
	agents, err := object(m, "agents", user)
	if err != nil {
		return nil, err
	}
	c := changeJSON(user, old, exists, m)
	switch v := agents["crossSessionInbound"]; v {
	case "accept":
	case nil:
		agents["crossSessionInbound"] = "accept"
		c = changeJSON(user, old, exists, m)
	default:
		// A choice of the person's (hold, refuse): theirs to change.
		c.new, c.note = old, fmt.Sprintf("agents.crossSessionInbound is %v: Qwen Code %s; set it to \"accept\" to let them in", v, qwenPolicyEffect(v))
	}
	return append(changes, c), nil
}

// qwenPolicyEffect says what an inbound policy does to Parley's letters.
func qwenPolicyEffect(v any) string {
	switch v {
	case "refuse":
		return "refuses Parley's letters"
	case "accept":
		return "takes Parley's letters"
	}
	return "holds Parley's letters for review (/peers)"
}

// qwenUserSettings is the user's Qwen Code settings file.
func qwenUserSettings() (string, error) {
	h := door.QwenHome(os.Getenv)
	if h == "" {
		return "", fmt.Errorf("no home directory: set HOME or QWEN_HOME")
	}
	return filepath.Join(h, "settings.json"), nil
}

// checkQwenLetters reads what the user's Qwen Code settings do to Parley's
// letters: the inbound policy, where it is set.
func checkQwenLetters() (policy, path string) {
	path, err := qwenUserSettings()
	if err != nil {
		return "", ""
	}
	m, _, _, err := loadJSONObject("", path)
	if err != nil {
		return "unreadable", path
	}
	if a, ok := m["agents"].(map[string]any); ok {
		if v, ok := a["crossSessionInbound"].(string); ok {
			return v, path
		}
	}
	return "", path
}

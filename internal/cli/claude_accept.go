package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Whether Claude Code sessions here will take Parley's letters or hold them
// for a person. A session in bypassPermissions holds a letter that asserts
// no permission mode (Parley's never assert one), unless crossSessionInbound
// is "accept" in the user's settings or the session's --settings; a
// project's settings cannot loosen it (Claude Code 2.1.332). The person can
// also choose deliver by default in /config → Messaging, which leaves no
// trace that Parley can read.

// acceptSetting is the settings overlay that lets letters in.
const acceptSetting = `{"crossSessionInbound":"accept"}`

// claudeLetters is what the settings say of Parley's letters.
type claudeLetters struct {
	Holds  bool   // sessions started here with these settings hold them
	Detail string // what the settings say
	Fix    string // what to change, if anything
}

// claudeUserSettings is the user's Claude Code settings file.
func claudeUserSettings() string {
	if d := os.Getenv("CLAUDE_CONFIG_DIR"); d != "" {
		return filepath.Join(d, "settings.json")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".claude", "settings.json")
}

// readClaudeSettings reads the two keys that decide, from a settings file
// ("" and "" when it is missing or unreadable).
func readClaudeSettings(path string) (inbound, mode string) {
	if path == "" {
		return "", ""
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", ""
	}
	var s struct {
		CrossSessionInbound string `json:"crossSessionInbound"`
		Permissions         struct {
			DefaultMode string `json:"defaultMode"`
		} `json:"permissions"`
	}
	if json.Unmarshal(b, &s) != nil {
		return "", ""
	}
	return s.CrossSessionInbound, s.Permissions.DefaultMode
}

// howToAccept says how to let a session take Parley's letters.
func howToAccept(user string) string {
	return fmt.Sprintf(`add "crossSessionInbound": "accept" to %s (a project's .claude/settings.json cannot loosen it), or start claude with --settings '%s', or choose deliver by default in /config → Messaging`, user, acceptSetting)
}

// sessionFlags reads what a Claude Code command line says of letters: its
// --permission-mode (--dangerously-skip-permissions is bypassPermissions)
// and the crossSessionInbound of its --settings (JSON, or a file).
func sessionFlags(args []string) (mode, inbound string) {
	for i, a := range args {
		next := ""
		if i+1 < len(args) {
			next = args[i+1]
		}
		switch {
		case a == "--permission-mode":
			mode = next
		case strings.HasPrefix(a, "--permission-mode="):
			mode = strings.TrimPrefix(a, "--permission-mode=")
		case a == "--dangerously-skip-permissions":
			mode = "bypassPermissions"
		case a == "--settings" || strings.HasPrefix(a, "--settings="):
			v := next
			if a != "--settings" {
				v = strings.TrimPrefix(a, "--settings=")
			}
			var s struct {
				CrossSessionInbound string `json:"crossSessionInbound"`
			}
			if json.Unmarshal([]byte(v), &s) != nil {
				if b, err := os.ReadFile(v); err == nil {
					json.Unmarshal(b, &s)
				}
			}
			if s.CrossSessionInbound != "" {
				inbound = s.CrossSessionInbound
			}
		}
	}
	return mode, inbound
}

// checkClaudeLetters reads the user's settings and the project's at root.
// args, if not nil, is a running session's command line (its hook reads
// it): its flags outrank the files.
func checkClaudeLetters(root string, args []string) claudeLetters {
	user := claudeUserSettings()
	inbound, userMode := readClaudeSettings(user)
	mode, flagInbound := sessionFlags(args)
	if flagInbound != "" {
		inbound, user = flagInbound, "the session's --settings"
	}
	defaultMode := userMode
	var ignored []string
	for _, f := range []string{filepath.Join(root, ".claude", "settings.json"), filepath.Join(root, ".claude", "settings.local.json")} {
		in, m := readClaudeSettings(f)
		if m != "" {
			defaultMode = m // the project's, then the local one, win
		}
		if in == "accept" {
			ignored = append(ignored, f)
		}
	}
	if mode == "" {
		mode = defaultMode
	}
	note := ""
	if len(ignored) > 0 {
		note = fmt.Sprintf(` (%s says "crossSessionInbound": "accept", which Claude Code ignores in a project's settings)`, strings.Join(ignored, ", "))
	}
	switch inbound {
	case "accept":
		return claudeLetters{Detail: fmt.Sprintf(`%s says "crossSessionInbound": "accept": sessions take Parley's letters in any permission mode`, user)}
	case "refuse":
		return claudeLetters{Holds: true, Detail: fmt.Sprintf(`%s says "crossSessionInbound": "refuse": sessions refuse Parley's letters`, user) + note,
			Fix: fmt.Sprintf(`set "crossSessionInbound": "accept" in %s`, user)}
	case "hold":
		return claudeLetters{Holds: true, Detail: fmt.Sprintf(`%s says "crossSessionInbound": "hold": sessions hold Parley's letters for you to approve`, user) + note,
			Fix: fmt.Sprintf(`set "crossSessionInbound": "accept" in %s`, user)}
	}
	if mode == "bypassPermissions" {
		return claudeLetters{Holds: true, Detail: "sessions here run in bypassPermissions: Claude Code holds Parley's letters for you to approve (they assert no permission mode)" + note,
			Fix: howToAccept(user)}
	}
	if mode == "" {
		mode = "default"
	}
	return claudeLetters{Detail: fmt.Sprintf("sessions here start in %s mode and take Parley's letters; one in bypassPermissions would hold them: to let them in there, %s", mode, howToAccept(user)) + note}
}

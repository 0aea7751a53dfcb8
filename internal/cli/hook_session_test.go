package cli

import "testing"

func TestIsParleyReadTool(t *testing.T) {
	for tool, want := range map[string]bool{
		"mcp__parley__check_messages":                 true,
		"mcp__plugin_parley_parley__wait_for_message": true,
		"mcp__plugin_parley_parley__send_message":     false,
		"mcp__parley__ack_message":                    false,
		"mcp__other__check_messages":                  false,
		"check_messages":                              false,
		"mcp__plugin_parley_parley__check_messages_x": false,
		"Bash": false,
	} {
		if got := isParleyReadTool(tool); got != want {
			t.Errorf("isParleyReadTool(%q) = %v, want %v", tool, got, want)
		}
	}
}

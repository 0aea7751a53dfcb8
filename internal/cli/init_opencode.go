package cli

import (
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"

	"github.com/parley-dev/parley/internal/door"
)

// opencode is what `parley init opencode` changes: the project's
// opencode.json gets mcp.parley, a local server that runs parley mcp
// serve. The door is the TUI's API, which it serves on loopback only when
// started with --port (0: 4096, or a free port); the server finds the
// port from OPENCODE_PID. (opencode 1.18.33's config server.port is for
// opencode serve and web, not the TUI: nothing init writes turns it on.)
func (p initPlan) opencode() ([]fileChange, error) {
	path := filepath.Join(p.root, "opencode.json")
	m, old, exists, err := loadJSONObject(p.root, path)
	if err != nil {
		return nil, err
	}
	servers, err := object(m, "mcp", path)
	if err != nil {
		return nil, err
	}
	entry := map[string]any{"type": "local", "command": toAny(append([]string{p.command}, p.serveArgs()...)), "enabled": true}
	var review []string
	if cur, ok := servers["parley"].(map[string]any); ok {
		for _, k := range slices.Sorted(maps.Keys(cur)) {
			if _, ours := entry[k]; !ours {
				review = append(review, fmt.Sprintf("took %s out of the parley server: %s", k, compactJSON(cur[k])))
			} else if !reflect.DeepEqual(normalJSON(cur[k]), normalJSON(entry[k])) {
				review = append(review, fmt.Sprintf("replaced the parley server's %s %s", k, compactJSON(cur[k])))
			}
		}
	}
	servers["parley"] = entry
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		if name != "parley" {
			review = append(review, fmt.Sprintf("kept the MCP server %q, not Parley's: %s", name, compactJSON(servers[name])))
		}
	}
	c := changeJSON(path, old, exists, m)
	c.review = review
	return []fileChange{c}, nil
}

// opencodeConfigPort is the server.port of dir's opencode.json, or 0.
func opencodeConfigPort(dir string) int {
	m, _, _, err := loadJSONObject(dir, filepath.Join(dir, "opencode.json"))
	if err != nil {
		return 0
	}
	s, _ := m["server"].(map[string]any)
	switch v := s["port"].(type) {
	case interface{ String() string }:
		n, _ := strconv.Atoi(v.String())
		return n
	case float64:
		return int(v)
	}
	return door.OpencodeDefaultPort
}

// opencodeArgs are the args of the parley server in root's opencode.json
// (its command after the program), or nil.
func opencodeArgs(root string) []string {
	m, _, _, err := loadJSONObject(root, filepath.Join(root, "opencode.json"))
	if err != nil {
		return nil
	}
	servers, _ := m["mcp"].(map[string]any)
	entry, _ := servers["parley"].(map[string]any)
	cmd, _ := entry["command"].([]any)
	if len(cmd) == 0 {
		return nil
	}
	args := []string{}
	for _, a := range cmd[1:] {
		if s, ok := a.(string); ok {
			args = append(args, s)
		}
	}
	return args
}

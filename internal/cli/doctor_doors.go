package cli

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"time"

	"github.com/parley-dev/parley/internal/door"
)

// clientVersion runs the client's --version (found on PATH) and reads
// its version: "" and an error when it is not installed or says none.
func clientVersion(ctx context.Context, command string) (string, error) {
	path, err := exec.LookPath(command)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", path, err)
	}
	v := versionRE.FindString(string(out))
	if v == "" {
		return "", fmt.Errorf("%s --version printed no version", path)
	}
	return v, nil
}

var versionRE = regexp.MustCompile(`\d+\.\d+\.\d+`)

// doctorDoor says whether the door of a client configured here is known
// to work with the version installed: the version Parley's door tests
// passed with (door.Certified).
func doctorDoor(ctx context.Context, client string, add addFunc) {
	c, ok := door.Certified[client]
	if !ok {
		return
	}
	check := client + " door"
	v, err := clientVersion(ctx, c.Command)
	_, missing := exec.LookPath(c.Command)
	switch {
	case missing != nil:
		add(check, "ok", fmt.Sprintf("%s is not on PATH; Parley's door is known to work with %s %s", c.Command, c.Package, c.Version), "")
	case err != nil:
		add(check, "warn", fmt.Sprintf("cannot tell the version of %s (%v); Parley's door is known to work with %s %s", c.Command, err, c.Package, c.Version), "")
	case v == c.Version:
		add(check, "ok", fmt.Sprintf("%s %s: the door is known to work with this version (Parley's door test runs it)", c.Package, v), "")
	default:
		add(check, "warn", fmt.Sprintf("%s %s: the door is not certified for this version (it is for %s); letters may not reach its sessions", c.Package, v, c.Version),
			fmt.Sprintf("install %s@%s, or check with scripts/newest-clients (a Parley checkout) that this version works", c.Package, c.Version))
	}
}

// doctorQwenLetters says whether the user's Qwen Code settings let
// Parley's letters in.
func doctorQwenLetters(add addFunc) {
	policy, path := checkQwenLetters()
	if policy == "accept" {
		add("qwen letters", "ok", "Qwen Code sessions take Parley's letters (agents.crossSessionInbound is accept in "+path+")", "")
		return
	}
	what := "unset"
	if policy != "" {
		what = policy
	}
	add("qwen letters", "warn", fmt.Sprintf("Qwen Code %s: agents.crossSessionInbound is %s in %s (a letter claims no review class)", qwenPolicyEffect(policy), what, path),
		`set "agents": {"crossSessionInbound": "accept"} in `+path+" (parley init qwen does), or release each letter in the session with /peers")
}

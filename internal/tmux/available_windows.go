//go:build windows

package tmux

import "fmt"

var unavailable = fmt.Errorf("%w: tmux does not run on Windows (Parley reaches agents through MCP waits, client doors and hooks instead)", ErrNoTmux)

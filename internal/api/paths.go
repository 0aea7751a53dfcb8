package api

import (
	"fmt"
	"os"
	"path/filepath"
)

// Paths are the files of a Parley state directory ($PARLEY_HOME).
type Paths struct {
	Home   string
	Socket string
	PID    string
	DB     string
	Log    string
	Config string
	Token  string
}

// MaxSocketPath is the longest Unix socket path the kernel accepts, less one.
const MaxSocketPath = 107

// HomePaths returns the paths under home; an empty home means $PARLEY_HOME,
// else ~/.parley.
func HomePaths(home string) (Paths, error) {
	if home == "" {
		home = os.Getenv("PARLEY_HOME")
	}
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return Paths{}, fmt.Errorf("find home directory: %w (set PARLEY_HOME)", err)
		}
		home = filepath.Join(h, ".parley")
	}
	home, err := filepath.Abs(home)
	if err != nil {
		return Paths{}, fmt.Errorf("state directory: %w", err)
	}
	p := Paths{
		Home:   home,
		Socket: filepath.Join(home, "parley.sock"),
		PID:    filepath.Join(home, "parley.pid"),
		DB:     filepath.Join(home, "parley.db"),
		Log:    filepath.Join(home, "daemon.log"),
		Config: filepath.Join(home, "config.toml"),
		Token:  filepath.Join(home, "token"),
	}
	if len(p.Socket) > MaxSocketPath {
		return Paths{}, fmt.Errorf("socket path %s is %d bytes, over the %d-byte limit of Unix sockets: set PARLEY_HOME to a shorter directory", p.Socket, len(p.Socket), MaxSocketPath)
	}
	return p, nil
}

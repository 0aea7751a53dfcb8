// Package home locates the files of a Parley state directory ($PARLEY_HOME,
// else ~/.parley) and names the local OS user. It is a leaf: the daemon, the
// CLI, the client and the tests import it; it imports only the standard library.
package home

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"unicode"
)

// Paths are the files of a Parley state directory ($PARLEY_HOME).
type Paths struct {
	Home string
	// Default says Home is the default, ~/.parley: no environment and no
	// flag chose it.
	Default bool
	Socket  string
	PID     string
	DB      string
	Log     string
	Config  string
	Token   string
}

// MaxSocketPath is the longest Unix socket path the kernel accepts, less one.
const MaxSocketPath = 107

// Resolve returns the paths under home; an empty home means $PARLEY_HOME,
// else ~/.parley.
func Resolve(home string) (Paths, error) {
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
	def := false
	if h, err := os.UserHomeDir(); err == nil {
		def = filepath.Join(h, ".parley") == home
	}
	p := Paths{
		Home:    home,
		Default: def,
		Socket:  filepath.Join(home, "parley.sock"),
		PID:     filepath.Join(home, "parley.pid"),
		DB:      filepath.Join(home, "parley.db"),
		Log:     filepath.Join(home, "daemon.log"),
		Config:  filepath.Join(home, "config.toml"),
		Token:   filepath.Join(home, "token"),
	}
	if len(p.Socket) > MaxSocketPath {
		return Paths{}, fmt.Errorf("socket path %s is %d bytes, over the %d-byte limit of Unix sockets: set PARLEY_HOME to a shorter directory", p.Socket, len(p.Socket), MaxSocketPath)
	}
	return p, nil
}

// UserName is the OS user's name as a Parley name: characters that a name may
// not hold become '-'.
func UserName() string {
	name := ""
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	if name == "" {
		name = os.Getenv("USER")
	}
	if i := strings.LastIndexByte(name, '\\'); i >= 0 { // DOMAIN\user
		name = name[i+1:]
	}
	name = strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '.' || r == '_' || r == '-' {
			return r
		}
		return '-'
	}, name)
	name = strings.TrimLeft(name, "._-")
	if name == "" {
		return "me"
	}
	return name
}

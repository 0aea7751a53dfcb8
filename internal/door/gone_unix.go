//go:build !windows

package door

import (
	"errors"
	"syscall"
)

// isConnRefused: a socket file whose session was killed (nobody listens).
func isConnRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

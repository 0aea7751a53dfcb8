//go:build windows

package door

import (
	"errors"

	"golang.org/x/sys/windows"
)

// isConnRefused: a socket file whose session was killed (nobody listens).
func isConnRefused(err error) bool { return errors.Is(err, windows.WSAECONNREFUSED) }

//go:build windows

package client

import (
	"errors"

	"golang.org/x/sys/windows"
)

// refused reports Winsock's own "nothing listens" errors, which differ from
// the syscall package's made-up ECONNREFUSED on Windows.
func refused(err error) bool {
	return errors.Is(err, windows.WSAECONNREFUSED) || errors.Is(err, windows.ERROR_FILE_NOT_FOUND) || errors.Is(err, windows.ERROR_PATH_NOT_FOUND)
}

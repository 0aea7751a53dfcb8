//go:build !linux

package door

import "errors"

// opencodeListeners is Linux's alone: elsewhere the server is found at its
// configured or default port (OpencodeServer).
func opencodeListeners(int) ([]int, error) {
	return nil, errors.New("no listener table on this system")
}

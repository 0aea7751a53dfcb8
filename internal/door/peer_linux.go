package door

import (
	"net"

	"golang.org/x/sys/unix"
)

// peerUID is the user of the process that listens at the other end.
func peerUID(c *net.UnixConn) (int, bool) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, false
	}
	var cred *unix.Ucred
	var gerr error
	if err := raw.Control(func(fd uintptr) { cred, gerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) }); err != nil || gerr != nil {
		return 0, false
	}
	return int(cred.Uid), true
}

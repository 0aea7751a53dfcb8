//go:build unix

package door

import (
	"fmt"
	"io/fs"
	"net"
	"os"
	"syscall"
)

// checkSocket refuses a door socket that is not this user's: the path a
// session registered (its environment's, which a repository or another
// user may have named) must be a socket owned by the user whose daemon
// writes into it, the session's user. A letter carries the session's
// messaging token and tells it to start a turn: it goes to nobody else.
func checkSocket(path string) error {
	st, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if st.Mode()&fs.ModeSocket == 0 {
		return fmt.Errorf("%w: %s is not a socket (%s): Parley writes letters only into a session's own socket", ErrRefused, path, st.Mode().Type())
	}
	if s, ok := st.Sys().(*syscall.Stat_t); ok && int(s.Uid) != os.Getuid() {
		return fmt.Errorf("%w: socket %s belongs to uid %d, not to this user (uid %d): Parley writes letters only into its own user's sessions", ErrRefused, path, s.Uid, os.Getuid())
	}
	return nil
}

// checkPeer refuses a connection whose listener runs as another user (the
// socket file was swapped after checkSocket), where the system says who
// that is (peerUID).
func checkPeer(conn net.Conn) error {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return nil
	}
	uid, ok := peerUID(uc)
	if ok && uid != os.Getuid() {
		return fmt.Errorf("%w: the socket's listener runs as uid %d, not as this user (uid %d)", ErrRefused, uid, os.Getuid())
	}
	return nil
}

//go:build unix

package e2e

import (
	"bytes"
	"net"
	"os"
	"syscall"
	"testing"
)

// answered is closed once conn has something to read, which it leaves unread.
func answered(t *testing.T, conn net.Conn) <-chan struct{} {
	ch := make(chan struct{})
	rc, err := conn.(syscall.Conn).SyscallConn()
	if err != nil {
		close(ch)
		return ch
	}
	go func() {
		defer close(ch)
		rc.Read(func(fd uintptr) bool { // returns early when conn closes
			var b [1]byte
			_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
			return err != syscall.EAGAIN && err != syscall.EINTR
		})
	}()
	return ch
}

// fillPipe writes to w until the pipe holds all it can, so that the next
// write blocks until someone reads.
func fillPipe(t *testing.T, w *os.File) {
	t.Helper()
	fd := int(w.Fd())
	if err := syscall.SetNonblock(fd, true); err != nil {
		t.Fatal(err)
	}
	buf := bytes.Repeat([]byte("x"), 4096)
	for {
		if _, err := syscall.Write(fd, buf); err != nil {
			break
		}
	}
	for {
		if _, err := syscall.Write(fd, buf[:1]); err != nil {
			break
		}
	}
	if err := syscall.SetNonblock(fd, false); err != nil {
		t.Fatal(err)
	}
}

// mkfifo makes a FIFO at path.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
}

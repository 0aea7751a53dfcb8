package mcpserver

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// TestReceivedFromHowConnectionsEnd runs the receipt inference over a real
// Unix socket with this platform's probe and with the portable one (what
// macOS and Windows use), so that Linux CI checks the fallback too. The cases
// are those where what the server's reader sees decides, for both.
func TestReceivedFromHowConnectionsEnd(t *testing.T) {
	probes := []struct {
		name  string
		probe sockProbe
	}{{"platform", platformProbe}, {"portable", portableProbe{}}}
	cases := []struct {
		name string
		// client acts on its side after the response: it reads it or not,
		// then sends more, hangs up or stays.
		client func(t *testing.T, c net.Conn)
		// ended: wait for the server's reader to see the end first.
		ended bool
		want  bool
	}{
		{"next request on the connection", func(t *testing.T, c net.Conn) {
			readAll(t, c)
			if _, err := c.Write([]byte("next")); err != nil {
				t.Fatal(err)
			}
		}, false, true},
		{"read, then a clean close", func(t *testing.T, c net.Conn) {
			readAll(t, c)
			c.Close()
		}, true, true},
		{"open and idle after reading", func(t *testing.T, c net.Conn) { readAll(t, c) }, false, true},
		{"closed unread", func(t *testing.T, c net.Conn) { c.Close() }, true, false},
	}
	for _, p := range probes {
		for _, tt := range cases {
			t.Run(p.name+"/"+tt.name, func(t *testing.T) {
				if runtime.GOOS != "linux" && tt.name == "closed unread" {
					t.Skip("a Unix socket closed with unread data resets its peer on Linux only")
				}
				srv, cli := watchedPair(t, p.probe)
				reads := make(chan []byte, 4)
				go func() { // the server's reader, as net/http's
					for {
						b := make([]byte, 64)
						n, err := srv.Read(b)
						if n > 0 {
							reads <- b[:n]
						}
						if err != nil {
							return
						}
					}
				}()
				if _, err := cli.Write([]byte("request")); err != nil {
					t.Fatal(err)
				}
				<-reads
				at := srv.mark()
				if _, err := srv.Write([]byte("response")); err != nil {
					t.Fatal(err)
				}
				tt.client(t, cli)
				switch {
				case tt.ended:
					<-srv.ended
				case tt.want && tt.name == "next request on the connection":
					<-reads
				}
				if got := srv.received(at); got != tt.want {
					t.Errorf("received: got %v, want %v", got, tt.want)
				}
			})
		}
	}
}

// watchedPair is a connection over a real Unix socket, its server side
// watched with probe.
func watchedPair(t *testing.T, probe sockProbe) (*watchedConn, net.Conn) {
	t.Helper()
	dir, err := os.MkdirTemp("", "pc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ln, err := net.Listen("unix", filepath.Join(dir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	wl := watchListener{ln, probe}
	cli, err := net.Dial("unix", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	c, err := wl.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*watchedConn), cli
}

// readAll reads the response the server wrote.
func readAll(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b := make([]byte, len("response"))
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Time{})
}

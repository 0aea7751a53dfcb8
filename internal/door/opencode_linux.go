package door

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// opencodeListeners lists the loopback TCP ports that process pid listens
// on (from /proc: its sockets' inodes, and the kernel's TCP tables).
func opencodeListeners(pid int) ([]int, error) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil, err
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		l, err := os.Readlink(filepath.Join(fmt.Sprintf("/proc/%d/fd", pid), fd.Name()))
		if ino, ok := strings.CutPrefix(l, "socket:["); err == nil && ok {
			inodes[strings.TrimSuffix(ino, "]")] = true
		}
	}
	var ports []int
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// sl local rem st tx:rx tr:when retrnsmt uid timeout inode
			fs := strings.Fields(sc.Text())
			if len(fs) < 10 || fs[3] != "0A" || !inodes[fs[9]] {
				continue
			}
			host, port, ok := strings.Cut(fs[1], ":")
			if !ok || !loopbackHex(host) {
				continue
			}
			if p, err := strconv.ParseInt(port, 16, 32); err == nil {
				ports = append(ports, int(p))
			}
		}
		f.Close()
	}
	return ports, nil
}

// loopbackHex reports whether a /proc/net/tcp address (hex, the kernel's
// byte order) is 127.0.0.0/8 or ::1.
func loopbackHex(h string) bool {
	switch len(h) {
	case 8:
		return strings.HasSuffix(h, "7F")
	case 32:
		return h == "00000000000000000000000001000000"
	}
	return false
}

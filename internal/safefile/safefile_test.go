//go:build unix

package safefile

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// nobody is a uid other than ours for chown: only root may give a file away.
const nobody = 65534

func asRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("giving a file to another user needs root; this test runs as uid", os.Geteuid())
	}
}

func TestWriteFileReplacesLinksInsteadOfFollowing(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("precious"), 0o600)
	path := filepath.Join(dir, "bob.json")
	// The names a predictable writer would use, and the target itself.
	for _, name := range []string{path + ".tmp", path} {
		if err := os.Symlink(victim, name); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteFile(path, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Errorf("victim: got %q, want it untouched", b)
	}
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o600 {
		t.Fatalf("written file: %v %v, want a regular 0600 file", st, err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Errorf("content: got %q", b)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 { // bob.json and the planted bob.json.tmp link
		t.Errorf("left behind: %v", ents)
	}
}

func TestOpenAppendRefusesLinksAndSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "bashrc")
	os.WriteFile(victim, []byte("precious"), 0o600)
	link := filepath.Join(dir, "daemon.log")
	os.Symlink(victim, link)
	if f, err := OpenAppend(link, 0o600); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		f.Close()
		t.Errorf("append through a link: got %v, want a refusal", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Errorf("victim: got %q", b)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if f, err := OpenAppend(fifo, 0o600); err == nil {
		f.Close()
		t.Error("append to a FIFO: got no error")
	}
	f, err := OpenAppend(filepath.Join(dir, "ok.log"), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func TestOpenAppendRefusesSomeoneElsesFile(t *testing.T) {
	asRoot(t)
	path := filepath.Join(t.TempDir(), "daemon.log")
	os.WriteFile(path, nil, 0o666)
	os.Chown(path, nobody, nobody)
	if f, err := OpenAppend(path, 0o600); err == nil || !errors.As(err, new(*NotOwnedError)) {
		f.Close()
		t.Errorf("got %v, want NotOwnedError", err)
	}
}

func TestSecureDir(t *testing.T) {
	base := t.TempDir()
	fresh := filepath.Join(base, "a", "home")
	if err := SecureDir(fresh); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(fresh); st.Mode().Perm() != 0o700 {
		t.Errorf("new directory: mode %o, want 700", st.Mode().Perm())
	}
	readable := filepath.Join(base, "readable")
	os.Mkdir(readable, 0o755)
	os.Chmod(readable, 0o755)
	if err := SecureDir(readable); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(readable); st.Mode().Perm() != 0o700 {
		t.Errorf("readable directory: mode %o, want tightened to 700", st.Mode().Perm())
	}
	writable := filepath.Join(base, "writable")
	os.Mkdir(writable, 0o777)
	os.Chmod(writable, 0o777)
	if err := SecureDir(writable); err == nil || !strings.Contains(err.Error(), "writable by other users") || !strings.Contains(err.Error(), "chmod 700") {
		t.Errorf("world-writable directory: got %v", err)
	}
	file := filepath.Join(base, "file")
	os.WriteFile(file, nil, 0o600)
	if err := SecureDir(file); err == nil {
		t.Error("a file: got no error")
	}
}

func TestSecureDirRefusesSomeoneElses(t *testing.T) {
	asRoot(t)
	dir := filepath.Join(t.TempDir(), "shared")
	os.Mkdir(dir, 0o700)
	os.Chown(dir, nobody, nobody)
	err := SecureDir(dir)
	if !errors.As(err, new(*NotOwnedError)) || !strings.Contains(err.Error(), "belongs to uid 65534") {
		t.Errorf("got %v, want a refusal naming the owner", err)
	}
	if st, _ := os.Stat(dir); st.Mode().Perm() != 0o700 {
		t.Errorf("mode changed to %o", st.Mode().Perm())
	}
}

func TestCheckSocket(t *testing.T) {
	dir, err := os.MkdirTemp("/tmp", "sf")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "s.sock")
	if err := CheckSocket(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing socket: got %v, want ErrNotExist", err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := CheckSocket(path); err != nil {
		t.Errorf("own socket: %v", err)
	}
	plain := filepath.Join(dir, "plain")
	os.WriteFile(plain, nil, 0o600)
	if err := CheckSocket(plain); err != nil {
		t.Errorf("a file of ours left where the socket goes: got %v, want it let through to fail to connect", err)
	}
	if os.Geteuid() != 0 {
		t.Skip("the cross-user cases need root to give the socket away")
	}
	os.Chown(path, nobody, nobody)
	if err := CheckSocket(path); !errors.As(err, new(*NotOwnedError)) {
		t.Errorf("someone else's socket: got %v", err)
	}
	os.Chown(path, 0, 0)
	os.Chown(dir, nobody, nobody)
	if err := CheckSocket(path); !errors.As(err, new(*NotOwnedError)) {
		t.Errorf("socket in someone else's directory: got %v", err)
	}
}

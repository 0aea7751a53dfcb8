// Package safefile writes and opens Parley's state files without following
// symbolic links, and checks that a state directory belongs to the user before
// anything is written in it. Any package that writes a file others could have
// prepared (a repository's .parley/, $PARLEY_HOME) goes through it.
package safefile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFile writes data to path atomically with mode perm. The temporary file
// is created exclusively (O_EXCL refuses any existing name, a symbolic link
// included) and renamed over path, which replaces a link at path rather than
// writing through it.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer r.Close()
	return WriteIn(r, base, data, perm)
}

// WriteIn is WriteFile for the file rel under r: nothing on the way, a link
// included, leads it out of r.
func WriteIn(r *os.Root, rel string, data []byte, perm fs.FileMode) error {
	var suffix [8]byte
	rand.Read(suffix[:])
	tmp := filepath.Join(filepath.Dir(rel), "."+filepath.Base(rel)+".tmp-"+hex.EncodeToString(suffix[:]))
	f, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Chmod(perm)
	}
	if werr == nil {
		werr = f.Sync()
	}
	if err := errors.Join(werr, f.Close()); err != nil {
		r.Remove(tmp)
		return err
	}
	if err := r.Rename(tmp, rel); err != nil {
		r.Remove(tmp)
		return err
	}
	return nil
}

// OpenAppend opens path for appending, creating it with perm. It refuses a
// symbolic link at path and anything but a regular file (a FIFO would block,
// a device would be written to).
func OpenAppend(path string, perm fs.FileMode) (*os.File, error) {
	f, err := openNoFollow(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, perm)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("open %s: not a regular file (%s)", path, st.Mode().Type())
	}
	if err := CheckOwner(path, st); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// OpenNoFollow opens path with flag (os.O_RDWR|os.O_CREATE...) and perm,
// refusing a symbolic link at path rather than opening what it points to.
func OpenNoFollow(path string, flag int, perm fs.FileMode) (*os.File, error) {
	return openNoFollow(path, flag, perm)
}

// errLink is the refusal of a symbolic link at path.
func errLink(path string) error {
	return fmt.Errorf("open %s: is a symbolic link; refusing to write through it", path)
}

// openChecked is the portable way to open path without following a link,
// for systems without O_NOFOLLOW: open, then check that what is at path now
// is no link and is the file opened. A link swapped in before the open makes
// the opened file differ from what Lstat finds; one swapped in after it is
// a link at path. Either is refused. (O_CREATE may have made the file a link
// pointed to; it is closed unwritten.)
func openChecked(path string, flag int, perm fs.FileMode) (*os.File, error) {
	if st, err := os.Lstat(path); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		return nil, errLink(path)
	}
	f, err := os.OpenFile(path, flag, perm)
	if err != nil {
		return nil, err
	}
	lst, err := os.Lstat(path)
	if err == nil && lst.Mode()&fs.ModeSymlink != 0 {
		f.Close()
		return nil, errLink(path)
	}
	fst, ferr := f.Stat()
	if err != nil || ferr != nil || !os.SameFile(fst, lst) {
		f.Close()
		return nil, fmt.Errorf("open %s: the file changed while it was opened; refusing it", path)
	}
	return f, nil
}

// NotOwnedError says a file or directory belongs to another user, or is open
// to others in a way that lets them plant files in it.
type NotOwnedError struct {
	Path   string
	Reason string
	Fix    string
}

func (e *NotOwnedError) Error() string {
	return fmt.Sprintf("%s %s: %s", e.Path, e.Reason, e.Fix)
}

// SecureDir makes dir (mode 0700) if it is missing and otherwise checks that
// it is a directory owned by this user that nobody else can write to. A
// directory that others may only read is tightened to 0700; one that others
// may write to is refused, since they could have planted links in it already.
func SecureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("make state directory: %w", err)
	}
	st, err := os.Stat(dir) // a link to a directory of one's own is fine
	if err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	if err := CheckDir(dir, st); err != nil {
		return err
	}
	if privateModes && st.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("secure state directory: %w", err)
		}
	}
	return nil
}

// CheckDir reports whether dir, whose Stat is st, is a directory owned by
// this user that no one else may write to.
func CheckDir(dir string, st fs.FileInfo) error {
	if !st.IsDir() {
		return &NotOwnedError{Path: dir, Reason: "is not a directory", Fix: "point PARLEY_HOME at a directory"}
	}
	if err := CheckOwner(dir, st); err != nil {
		return err
	}
	if privateModes && st.Mode().Perm()&0o022 != 0 {
		return &NotOwnedError{Path: dir, Reason: fmt.Sprintf("is writable by other users (mode %04o)", st.Mode().Perm()),
			Fix: fmt.Sprintf("check its contents for files you did not make, then run `chmod 700 %s`", dir)}
	}
	return nil
}

// CheckSocket reports whether the socket at path and the directory holding it
// belong to this user, so that a client never talks to a daemon someone else
// planted there. A missing socket is fs.ErrNotExist.
func CheckSocket(path string) error {
	dir := filepath.Dir(path)
	dst, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if err := CheckDir(dir, dst); err != nil {
		return err
	}
	// Only the owner matters: anything else of ours at the path (a file a
	// crash left) refuses the connection, and the next daemon replaces it.
	st, err := os.Lstat(path)
	if err != nil {
		return err
	}
	return CheckOwner(path, st)
}

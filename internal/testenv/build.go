package testenv

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/parley-dev/parley/internal/filelock"
)

// The binaries tests run (the module's main packages).
const (
	Parley   = "cmd/parley"
	Upstream = "internal/gateway/testdata/upstream"
)

var built sync.Map // key: *buildOnce

type buildOnce struct {
	once sync.Once
	path string
	err  error
}

// Binary returns the executable of the module's main package pkg (a path
// from the module root, such as Parley) built with flags. The test suites of
// one `go test ./...` share it: it is built once, under a file lock, into a
// directory named by a hash of every file of the module, the flags and the
// Go version, so that a change anywhere builds afresh and nothing stale is
// run. Directories of other hashes older than a day are removed.
func Binary(pkg string, flags ...string) (string, error) {
	k := pkg + "\x00" + strings.Join(flags, "\x00")
	v, _ := built.LoadOrStore(k, &buildOnce{})
	b := v.(*buildOnce)
	b.once.Do(func() { b.path, b.err = build(pkg, flags) })
	return b.path, b.err
}

func build(pkg string, flags []string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00", runtime.Version(), os.Getenv("GOFLAGS"), pkg, strings.Join(flags, "\x00"))
	if err := hashTree(h, root); err != nil {
		return "", fmt.Errorf("hash the module: %w", err)
	}
	key := hex.EncodeToString(h.Sum(nil))[:16]
	base := filepath.Join(os.TempDir(), "parley-testbin")
	dir := filepath.Join(base, key)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := filelock.Lock(lock); err != nil {
		return "", fmt.Errorf("lock %s: %w", dir, err)
	}
	defer filelock.Unlock(lock)
	out := filepath.Join(dir, filepath.Base(pkg))
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	args := append(append([]string{"build"}, flags...), "-o", out+".tmp", "./"+pkg)
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	if err := os.Rename(out+".tmp", out); err != nil {
		return "", err
	}
	prune(base, key)
	return out, nil
}

// moduleRoot is the directory of go.mod, above the test's directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("no go.mod above the test's directory")
		}
		dir = up
	}
}

// hashTree hashes the names and contents of the module's files, less .git
// and node_modules (a few MB: milliseconds).
func hashTree(h io.Writer, root string) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == ".git" || n == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		rel, _ := filepath.Rel(root, path)
		fmt.Fprintf(h, "%s\x00", rel)
		_, err = io.Copy(h, f)
		return err
	})
}

// prune removes the build directories of other hashes older than a day.
func prune(base, keep string) {
	ents, _ := os.ReadDir(base)
	for _, e := range ents {
		if e.Name() == keep {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > 24*time.Hour {
			os.RemoveAll(filepath.Join(base, e.Name()))
		}
	}
}

package workspace

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/parley-dev/parley/internal/safefile"
)

// An identity file written by `parley join` may name a workspace other than
// its repository's (join --workspace W). One shipped in a cloned repository
// may too, to join its user to the author's workspace. To tell them apart,
// join seals the name and workspace with a key that only the user has
// ($PARLEY_HOME/identity.key): Resolve honours another workspace only under
// a seal that the user's key verifies.

// keyFile is the seal key's name in the state directory.
const keyFile = "identity.key"

// loadKey returns the seal key in home, making it when create is set and
// there is none. The key is linked into place whole, so two joins at once
// agree on one key.
func loadKey(home string, create bool) ([]byte, error) {
	if home == "" {
		return nil, errors.New("no state directory")
	}
	path := filepath.Join(home, keyFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && create {
		b, err = makeKey(home, path)
	}
	if err != nil {
		return nil, err
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(key) < 16 {
		return nil, fmt.Errorf("%s is damaged: remove it and join again", path)
	}
	return key, nil
}

func makeKey(home, path string) ([]byte, error) {
	if err := safefile.SecureDir(home); err != nil {
		return nil, err
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(home, "."+keyFile+".tmp-*")
	if err != nil {
		return nil, err
	}
	_, werr := f.WriteString(hex.EncodeToString(raw) + "\n")
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		os.Remove(f.Name())
		return nil, err
	}
	lerr := os.Link(f.Name(), path)
	os.Remove(f.Name())
	if lerr != nil && !errors.Is(lerr, fs.ErrExist) {
		return nil, lerr
	}
	return os.ReadFile(path)
}

// seal is the MAC of an identity's name and workspace under key.
func seal(key []byte, name, ws string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("parley identity\x00" + name + "\x00" + ws))
	return hex.EncodeToString(m.Sum(nil))
}

// sealed reports whether id's seal is the user's, from home's key.
func sealed(home string, id *Identity) bool {
	if id.Seal == "" {
		return false
	}
	key, err := loadKey(home, false)
	if err != nil {
		return false
	}
	return hmac.Equal([]byte(seal(key, id.Name, id.Workspace)), []byte(id.Seal))
}

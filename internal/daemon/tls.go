package daemon

import (
	"crypto/tls"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"
)

// The team server: the TCP listener speaks TLS when config.toml names a
// certificate and its key (tls_cert, tls_key: PEM files, the certificate
// file holding its chain). The files are read again when they change
// (a renewal), at most once a minute, without a restart.

// certCheckEvery bounds how often the certificate files are looked at.
const certCheckEvery = time.Minute

// certFiles serves a certificate from files, reloading it when they change.
type certFiles struct {
	certPath, keyPath string

	mu        sync.Mutex
	cert      *tls.Certificate
	certMod   time.Time
	keyMod    time.Time
	checkedAt time.Time
}

// loadCert reads the certificate and key, or says what is wrong with them.
func loadCert(certPath, keyPath string) (*certFiles, error) {
	c := &certFiles{certPath: certPath, keyPath: keyPath}
	if err := c.reload(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *certFiles) reload() error {
	ci, err := os.Stat(c.certPath)
	if err != nil {
		return fmt.Errorf("tls_cert: %w", err)
	}
	ki, err := os.Stat(c.keyPath)
	if err != nil {
		return fmt.Errorf("tls_key: %w", err)
	}
	// Windows keeps no such bits: its ACLs are the user's to set.
	if runtime.GOOS != "windows" && ki.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("tls_key %s is readable by others (mode %v): chmod 600 it", c.keyPath, ki.Mode().Perm())
	}
	cert, err := tls.LoadX509KeyPair(c.certPath, c.keyPath)
	if err != nil {
		return fmt.Errorf("tls_cert %s and tls_key %s: %w", c.certPath, c.keyPath, err)
	}
	// A certificate out of its validity is refused by every client: it
	// stops the daemon at start (and a renewal that is, is not taken up).
	switch now := time.Now(); {
	case now.After(cert.Leaf.NotAfter):
		return fmt.Errorf("tls_cert %s expired on %s: renew it (clients refuse an expired certificate)", c.certPath, cert.Leaf.NotAfter.UTC().Format(time.RFC3339))
	case now.Before(cert.Leaf.NotBefore):
		return fmt.Errorf("tls_cert %s is not valid until %s: check this machine's clock, or use a certificate valid now", c.certPath, cert.Leaf.NotBefore.UTC().Format(time.RFC3339))
	}
	c.cert, c.certMod, c.keyMod = &cert, ci.ModTime(), ki.ModTime()
	return nil
}

// get is tls.Config.GetCertificate: the certificate, read again if its
// files changed since it was loaded. A renewal that cannot be read leaves
// the old one in use (and says why, once a minute).
func (c *certFiles) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := time.Now(); now.Sub(c.checkedAt) >= certCheckEvery {
		c.checkedAt = now
		ci, err1 := os.Stat(c.certPath)
		ki, err2 := os.Stat(c.keyPath)
		if err1 == nil && err2 == nil && (!ci.ModTime().Equal(c.certMod) || !ki.ModTime().Equal(c.keyMod)) {
			old := c.cert
			if err := c.reload(); err != nil {
				c.cert = old
				return old, nil
			}
		}
	}
	return c.cert, nil
}

// tlsConfig is the team server's TLS: TLS 1.2 at least, HTTP/1.1 only (the
// stream session and the event stream take the connection over, which
// HTTP/2 cannot).
func (c *certFiles) tlsConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: c.get, NextProtos: []string{"http/1.1"}}
}

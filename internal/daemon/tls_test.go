package daemon

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// writeCert writes a self-signed certificate for name and its key into dir.
func writeCert(t *testing.T, dir, name string) (certPath, keyPath string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	certPath, keyPath = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+".key")
	os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	return certPath, keyPath
}

// TestLoadCert: bad certificate files are said clearly at start; a renewed
// certificate is served without a restart; a renewal that cannot be read
// leaves the old one in use.
func TestLoadCert(t *testing.T) {
	dir := t.TempDir()
	cert, key := writeCert(t, dir, "one.example")
	otherCert, otherKey := writeCert(t, dir, "two.example")
	for _, tt := range []struct {
		name, cert, key, wantErr string
		prep                     func(t *testing.T)
	}{
		{name: "missing cert", cert: filepath.Join(dir, "nope.pem"), key: key, wantErr: "tls_cert"},
		{name: "missing key", cert: cert, key: filepath.Join(dir, "nope.key"), wantErr: "tls_key"},
		{name: "key of another certificate", cert: cert, key: otherKey, wantErr: "private key does not match"},
		{name: "key readable by others", cert: cert, key: key, wantErr: "readable by others",
			prep: func(t *testing.T) { os.Chmod(key, 0o644); t.Cleanup(func() { os.Chmod(key, 0o600) }) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.prep != nil {
				if runtime.GOOS == "windows" {
					t.Skip("no permission bits on Windows")
				}
				tt.prep(t)
			}
			if _, err := loadCert(tt.cert, tt.key); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("got %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}

	c, err := loadCert(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	name := func() string {
		got, err := c.get(nil)
		if err != nil {
			t.Fatal(err)
		}
		x, _ := x509.ParseCertificate(got.Certificate[0])
		return x.Subject.CommonName
	}
	if n := name(); n != "one.example" {
		t.Fatalf("served %s, want one.example", n)
	}
	// A renewal: new files in place, a minute later.
	b1, _ := os.ReadFile(otherCert)
	b2, _ := os.ReadFile(otherKey)
	os.WriteFile(cert, b1, 0o644)
	os.WriteFile(key, b2, 0o600)
	later := time.Now().Add(time.Second)
	os.Chtimes(cert, later, later)
	os.Chtimes(key, later, later)
	c.mu.Lock()
	c.checkedAt = time.Time{}
	c.mu.Unlock()
	if n := name(); n != "two.example" {
		t.Errorf("after the renewal: served %s, want two.example", n)
	}
	// A broken renewal keeps the certificate in use.
	os.WriteFile(cert, []byte("not a certificate"), 0o644)
	later = later.Add(time.Second)
	os.Chtimes(cert, later, later)
	c.mu.Lock()
	c.checkedAt = time.Time{}
	c.mu.Unlock()
	if n := name(); n != "two.example" {
		t.Errorf("after a broken renewal: served %s, want two.example still", n)
	}
}

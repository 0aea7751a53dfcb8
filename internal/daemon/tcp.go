package daemon

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/httpapi"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/token"
)

// tokenBytes is the entropy of a generated bearer token.
const tokenBytes = 32

// loadToken returns the bearer token in path, generating it (0600) when the
// file is missing or empty. A token file that others can read is tightened to
// 0600 rather than trusted as is.
func loadToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	switch {
	case err == nil && len(strings.TrimSpace(string(b))) > 0:
		fi, err := os.Stat(path)
		if err != nil {
			return "", fmt.Errorf("token: %w", err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(path, 0o600); err != nil {
				return "", fmt.Errorf("token file %s is readable by others and cannot be secured: %w", path, err)
			}
		}
		tok := strings.TrimSpace(string(b))
		if len(tok) < 16 || strings.ContainsAny(tok, " \t\r\n") {
			return "", fmt.Errorf("token file %s holds no valid token (want one line of at least 16 characters): delete it and a new one is generated on start", path)
		}
		return tok, nil
	case err == nil, errors.Is(err, os.ErrNotExist):
	default:
		return "", fmt.Errorf("read token: %w", err)
	}
	raw := make([]byte, tokenBytes)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("generate token: %w", err)
	}
	tok := hex.EncodeToString(raw)
	// Write then rename, so a reader never sees half a token.
	tmp := path + ".tmp"
	os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("write token: %w", err)
	}
	_, werr := f.WriteString(tok + "\n")
	if err := errors.Join(werr, f.Close()); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("write token: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("write token: %w", err)
	}
	return tok, nil
}

// tcpEndpoint is the optional TCP listener's address and the requests it admits.
type tcpEndpoint struct {
	addr  string          // the bound address, host:port
	hosts map[string]bool // Host headers admitted (lower case)
	// anyHost admits every Host: a remote listener on a wildcard address is
	// reached under names the daemon cannot know; the token still guards it.
	anyHost bool
	token   []byte      // the admin token
	tokens  token.Store // agent tokens (tokens.go)
	// revocations ends a request in progress (a blocked wait, a stream)
	// when its agent token is revoked.
	revocations *token.Watcher
	// agentMay reports whether an agent token may reach a request's endpoint.
	agentMay func(*http.Request) bool
	// tls: the listener speaks TLS (a team server).
	tls bool
}

// listenTCP opens the TCP listener for addr. A non-loopback address needs
// allowRemote.
func listenTCP(addr string, allowRemote bool, token string) (net.Listener, *tcpEndpoint, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, fmt.Errorf("invalid listen address %q: want host:port, e.g. 127.0.0.1:7474", addr)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return nil, nil, fmt.Errorf("invalid listen address %q: bad port %q", addr, port)
	}
	loopback := isLoopbackHost(host)
	if !loopback && !allowRemote {
		return nil, nil, fmt.Errorf("listen address %q is not loopback: anyone who reaches it could try the token; pass --allow-remote (or allow_remote = true in config.toml) to mean it, or listen on 127.0.0.1", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	bound := ln.Addr().(*net.TCPAddr)
	p := strconv.Itoa(bound.Port)
	e := &tcpEndpoint{addr: net.JoinHostPort(host, p), token: []byte(token), hosts: map[string]bool{}}
	for _, h := range []string{host, bound.IP.String(), "localhost", "127.0.0.1", "::1"} {
		if h != "" {
			e.hosts[strings.ToLower(net.JoinHostPort(h, p))] = true
		}
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		e.anyHost = allowRemote
	}
	return ln, e, nil
}

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// origins are the browser origins of pages served by this listener.
func (e *tcpEndpoint) origins() []string {
	_, port, _ := net.SplitHostPort(e.addr)
	scheme := "http://"
	if e.tls {
		scheme = "https://"
	}
	return []string{scheme + "127.0.0.1:" + port, scheme + "localhost:" + port, scheme + "[::1]:" + port}
}

// URL is how a client reaches the listener: https:// with TLS.
func (e *tcpEndpoint) URL() string {
	if e.tls {
		return "https://" + e.addr
	}
	return "http://" + e.addr
}

// guard admits a TCP request only with the right Host header (DNS-rebinding
// protection) and the bearer token. Refused requests reach nothing else.
func (e *tcpEndpoint) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !e.anyHost && !e.hosts[strings.ToLower(r.Host)] {
			refuse(w, http.StatusForbidden, "forbidden", fmt.Sprintf("host %q refused: this daemon answers only as %s (DNS-rebinding protection)", r.Host, e.addr))
			return
		}
		r.Header.Del(api.HeaderAgentToken) // the guard's to set, below
		tok := bearer(r)
		if tok != "" && token.IsAgentToken(tok) && e.tokens != nil {
			t, err := lookupToken(r.Context(), e.tokens, tok)
			switch {
			case err == nil:
				if why := bindAgent(r, t, e.agentMay); why != "" {
					refuse(w, http.StatusForbidden, "forbidden", why)
					return
				}
				// Revoking the token ends the request (a wait answers
				// that it was revoked; a stream closes).
				ctx, cancel := context.WithCancelCause(r.Context())
				stop := e.revocations.Watch(t.ID, func() { cancel(token.ErrRevoked) })
				defer func() { stop(); cancel(nil) }()
				next.ServeHTTP(w, r.WithContext(ctx))
				return
			case !hub.IsNotFound(err):
				httpapi.WriteError(w, err) // the store cannot say: 503, not 401
				return
			}
		}
		if !e.authorized(tok) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="parley"`)
			refuse(w, http.StatusUnauthorized, "unauthorized", "missing, wrong or revoked bearer token: send 'Authorization: Bearer TOKEN' with the admin token in $PARLEY_HOME/token or an agent token from `parley token create`")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// bearer returns the request's bearer token, or "".
func bearer(r *http.Request) string {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

// authorized reports whether tok is the admin token.
func (e *tcpEndpoint) authorized(tok string) bool {
	return tok != "" && subtle.ConstantTimeCompare([]byte(tok), e.token) == 1
}

// refuse writes an error body in the API's shape.
func refuse(w http.ResponseWriter, code int, kind, msg string) {
	var b api.ErrorBody
	b.Error.Kind, b.Error.Message = kind, msg
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(b)
}

// openTCP makes sure the bearer token exists and, when a listen address is
// configured (Config.Listen, else config.toml's listen), listens on it with h
// behind the Host and token checks.
func (d *Daemon) openTCP(h http.Handler) error {
	tok, err := loadToken(d.paths.Token)
	if err != nil {
		return err
	}
	d.adminToken = tok // a new one ends the dashboard's sign-ins
	addr, remote := d.cfg.Listen, d.cfg.AllowRemote
	if addr == "" {
		addr = d.conf.Listen
	}
	remote = remote || d.conf.AllowRemote
	var certs *certFiles
	if d.conf.TLSCert != "" {
		if addr == "" {
			return fmt.Errorf("config.toml has tls_cert but no listen address: add listen = \"0.0.0.0:7474\" (or start with --listen)")
		}
		if certs, err = loadCert(d.conf.TLSCert, d.conf.TLSKey); err != nil {
			return err
		}
		// TLS is the point of a non-loopback listener: it says so.
		remote = true
	}
	if addr == "" {
		return nil
	}
	d.tcpLn, d.tcp, err = listenTCP(addr, remote, tok)
	if err != nil {
		return err
	}
	if certs != nil {
		// A browser page that rebinds a name of its own to this address
		// meets a certificate for another name, and is refused by the
		// browser: any Host may be admitted. The token still guards.
		d.tcpLn = tls.NewListener(d.tcpLn, certs.tlsConfig())
		d.tcp.tls, d.tcp.anyHost = true, true
	} else if host, _, _ := net.SplitHostPort(d.tcp.addr); !isLoopbackHost(host) {
		d.log.Warn("the TCP listener is not loopback and speaks no TLS: tokens cross the network in the clear; set tls_cert and tls_key in config.toml, or put a TLS reverse proxy in front (docs/team-server.md)", "addr", d.tcp.addr)
	}
	d.tcp.tokens, d.tcp.agentMay, d.tcp.revocations = d.db, d.agentMay, &d.revocations
	for _, o := range d.tcp.origins() {
		d.origins[o] = true
	}
	d.tcpSrv = &http.Server{
		Handler:           d.tcp.guard(h),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          d.srv.ErrorLog,
		BaseContext:       d.srv.BaseContext,
		ConnContext:       d.srv.ConnContext,
	}
	return nil
}

// TCPAddr is the TCP listener's address (host:port), or "" without one.
func (d *Daemon) TCPAddr() string {
	if d.tcp == nil {
		return ""
	}
	return d.tcp.addr
}

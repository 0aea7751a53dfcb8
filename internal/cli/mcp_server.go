package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/bridge"
	"github.com/parley-dev/parley/internal/client"
)

// serverWait bounds how long a request waits for a team server that went
// away (a restart) before it fails: clients time their calls out too.
const serverWait = 45 * time.Second

// remoteServe is `mcp serve --server URL`: an MCP client on a laptop speaks to
// a team server's daemon over TLS, as the agent its token binds.
type remoteServe struct {
	server, tokenFile, caFile string
	role, module, profile     string
	withChannel               bool
}

// run bridges stdio to the team server's /mcp with the same session layer as
// the local bridge (internal/bridge): one stream connection, re-opened and
// re-initialized after the server restarts, confirmations of what the client
// got. Where the local bridge starts a daemon that is gone, this one waits
// for the server to come back.
func (rs *remoteServe) run(cmd *cobra.Command, g *globals) error {
	u, err := url.Parse(rs.server)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("invalid --server %q: want the team server's URL, https://HOST[:PORT]", rs.server)
	}
	if u.Scheme == "http" && !isLoopbackURL(u) {
		return fmt.Errorf("--server %s: plain http to another machine sends the token in the clear; use https:// (the daemon's tls_cert, or a TLS reverse proxy)", rs.server)
	}
	tok, err := rs.token()
	if err != nil {
		return err
	}
	tlsConf, err := rs.tlsConfig()
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	base := strings.TrimSuffix(u.String(), "/")
	c, err := client.NewRemote(base, tok, tlsConf)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	// Said now, on stderr: once the MCP client connects, all it shows is
	// "Failed to connect".
	if _, err := c.Health(ctx); err != nil {
		return fmt.Errorf("the team server at %s does not answer: %w", base, err)
	}

	// The token binds agent, workspace and role: send only what was asked
	// for explicitly, which the server checks against the token.
	hello := api.Hello{Agent: firstOf(g.agent, os.Getenv("PARLEY_AGENT")), Workspace: firstOf(g.workspace, os.Getenv("PARLEY_WORKSPACE")),
		Role: firstOf(rs.role, os.Getenv("PARLEY_ROLE")), Module: rs.module,
		Profiles: splitList(firstOf(rs.profile, os.Getenv("PARLEY_PROFILE"))), Push: rs.withChannel}
	h := http.Header{"Authorization": {"Bearer " + tok}, api.HeaderHello: {hello.Header()}}
	opts := &bridge.Options{
		URL:       base + "/mcp",
		Header:    h,
		Logger:    log,
		TLSConfig: tlsConf,
		Reconnect: func(ctx context.Context) error { return waitForServer(ctx, c, serverWait) },
		Stream:    true,
	}
	if rs.withChannel {
		opts.Extension = &channel{c: c.Via("channel"), log: log}
	}
	return runBridge(ctx, cmd.InOrStdin(), g.raw, opts)
}

// token reads the agent token: $PARLEY_TOKEN, else --token-file.
func (rs *remoteServe) token() (string, error) {
	if t := strings.TrimSpace(os.Getenv(api.EnvToken)); t != "" {
		return t, nil
	}
	if rs.tokenFile == "" {
		return "", fmt.Errorf("--server needs an agent token: set %s, or give --token-file PATH (the team server's admin makes one with `parley token create --agent NAME`)", api.EnvToken)
	}
	b, err := os.ReadFile(rs.tokenFile)
	if err != nil {
		return "", fmt.Errorf("read --token-file: %w", err)
	}
	if fi, err := os.Stat(rs.tokenFile); err == nil && fi.Mode().Perm()&0o077 != 0 && runtime.GOOS != "windows" {
		return "", fmt.Errorf("--token-file %s is readable by others (mode %v): chmod 600 it", rs.tokenFile, fi.Mode().Perm())
	}
	t := strings.TrimSpace(string(b))
	if t == "" || strings.ContainsAny(t, " \t\r\n") {
		return "", fmt.Errorf("--token-file %s holds no token: want the one line `parley token create` printed", rs.tokenFile)
	}
	return t, nil
}

// tlsConfig trusts the system's roots, and the CA of --ca-file if given (a
// team server whose certificate a private CA, or the server itself, signed).
func (rs *remoteServe) tlsConfig() (*tls.Config, error) {
	if rs.caFile == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(rs.caFile)
	if err != nil {
		return nil, fmt.Errorf("read --ca-file: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--ca-file %s holds no PEM certificate", rs.caFile)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// waitForServer waits, with backoff, until the team server answers, or
// within passes.
func waitForServer(ctx context.Context, c *client.Client, within time.Duration) error {
	deadline := time.Now().Add(within)
	backoff := 100 * time.Millisecond
	for {
		_, err := c.Health(ctx)
		if err == nil {
			return nil
		}
		if time.Now().Add(backoff).After(deadline) {
			return fmt.Errorf("the team server did not come back within %s: %w", within, err)
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		backoff = min(backoff*2, 2*time.Second)
	}
}

func isLoopbackURL(u *url.URL) bool {
	h := u.Hostname()
	return h == "localhost" || h == "127.0.0.1" || h == "::1"
}

func firstOf(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

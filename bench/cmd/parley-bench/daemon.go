package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// daemon is one Parley installation in a temporary state directory.
type daemon struct {
	bin, home string
	hc        *http.Client
	pid       int
	env       []string // more environment for its commands (PARLEY_STORE)
}

// newHome makes a state directory at a short path (socket paths are bounded).
func (b *bench) newHome() (*daemon, error) {
	home, err := os.MkdirTemp("/tmp", "pb")
	if err != nil {
		return nil, err
	}
	d := &daemon{bin: b.bin, home: home}
	sock := filepath.Join(home, "parley.sock")
	d.hc = &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var nd net.Dialer
			return nd.DialContext(ctx, "unix", sock)
		},
		MaxIdleConns:        4096,
		MaxIdleConnsPerHost: 4096,
	}}
	b.cleanups = append(b.cleanups, func() {
		d.cmd("daemon", "stop", "--timeout", "5s").Run()
		os.RemoveAll(home)
	})
	return d, nil
}

func (d *daemon) cmd(args ...string) *exec.Cmd {
	c := exec.Command(d.bin, args...)
	c.Env = append([]string{"PARLEY_HOME=" + d.home, "HOME=" + d.home, "PATH=" + os.Getenv("PATH")}, d.env...)
	if v := os.Getenv("PARLEY_SDK_WORKAROUNDS"); v != "" {
		c.Env = append(c.Env, "PARLEY_SDK_WORKAROUNDS="+v) // measure one off
	}
	if *flagGOGC != "" {
		c.Env = append(c.Env, "GOGC="+*flagGOGC)
	}
	c.Dir = d.home
	return c
}

// start starts the daemon and returns once it is healthy.
func (d *daemon) start() error {
	out, err := d.cmd("daemon", "start").CombinedOutput()
	if err != nil {
		return fmt.Errorf("parley daemon start: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(d.home, "parley.pid"))
	if err != nil {
		return fmt.Errorf("read pid file: %w", err)
	}
	var li struct{ PID int }
	if err := json.Unmarshal(b, &li); err != nil {
		return fmt.Errorf("parse pid file: %w", err)
	}
	d.pid = li.PID
	return nil
}

// rss is VmRSS of pid in bytes.
func rss(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// cpuTime is the user plus system CPU time pid has used so far.
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the parenthesised command name; utime and stime are the
	// 14th and 15th fields, in clock ticks (100 per second on Linux).
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+k) * 10 * time.Millisecond
}

// api calls the JSON API as agent in ws and decodes the answer into out.
func (d *daemon) api(ctx context.Context, method, path, ws, agent string, in, out any) error {
	var body bytes.Buffer
	if in != nil {
		json.NewEncoder(&body).Encode(in)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://parley/api/v1"+path, &body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Parley-Workspace", ws)
	if agent != "" {
		req.Header.Set("Parley-Agent", agent)
	}
	resp, err := d.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e bytes.Buffer
		e.ReadFrom(resp.Body)
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(e.String()))
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

var clientOpts = &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}

// httpSession opens an MCP session straight on the socket (Streamable HTTP).
func (d *daemon) httpSession(ctx context.Context, ws, agent string) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "parley-bench", Version: "1"}, nil)
	q := url.Values{"workspace": {ws}, "agent": {agent}}
	return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://parley/mcp?" + q.Encode(), HTTPClient: d.hc}, clientOpts)
}

// stdioSession opens an MCP session through `parley mcp serve`.
func (d *daemon) stdioSession(ctx context.Context, ws, agent string) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "parley-bench", Version: "1"}, nil)
	cmd := d.cmd("mcp", "serve", "--workspace", ws, "--agent", agent)
	return c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, clientOpts)
}

// callOK calls a tool and fails on a protocol or tool error.
func callOK(ctx context.Context, s *mcp.ClientSession, name string, args map[string]any) (*mcp.CallToolResult, error) {
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if res.IsError {
		var b strings.Builder
		for _, c := range res.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				b.WriteString(t.Text)
			}
		}
		return nil, fmt.Errorf("%s: tool error: %s", name, b.String())
	}
	return res, nil
}

// percentiles returns p50, p99 and p999 of ds (sorted in place).
func percentiles(ds []time.Duration) [3]time.Duration {
	if len(ds) == 0 {
		return [3]time.Duration{}
	}
	slices.Sort(ds)
	at := func(p float64) time.Duration { return ds[int(float64(len(ds)-1)*p)] }
	return [3]time.Duration{at(0.50), at(0.99), at(0.999)}
}

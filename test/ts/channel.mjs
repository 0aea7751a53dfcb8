// The channel protocol of `parley mcp serve --channel` with the official
// TypeScript MCP SDK as the client (Claude Code's side): the server declares
// claude/channel and claude/channel/permission, pushes a message sent to its
// agent as notifications/claude/channel, files a relayed permission prompt in
// Parley's inbox and sends the decision back. Prints one JSON object with
// what the client saw; the Go test checks it.
import { execFileSync } from "node:child_process";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [bin, workspace] = process.argv.slice(2);
const parley = (...args) => execFileSync(bin, [...args, "--workspace", workspace], { encoding: "utf8" });

const seen = [];
let arrived = () => {};
const client = new Client({ name: "ts-channel", version: "1.0.0" });
client.fallbackNotificationHandler = async (n) => {
  seen.push(n);
  arrived();
};
await client.connect(new StdioClientTransport({
  command: bin,
  args: ["mcp", "serve", "--channel", "--agent", "bob", "--workspace", workspace],
  env: { ...process.env },
  stderr: "inherit",
}));

// next waits for the next notification of method.
async function next(method) {
  const deadline = Date.now() + 20000;
  for (;;) {
    const i = seen.findIndex((n) => n.method === method);
    if (i >= 0) return seen.splice(i, 1)[0];
    if (Date.now() > deadline) throw new Error(`no ${method} within 20 s`);
    await new Promise((r) => { arrived = r; setTimeout(r, 200); });
  }
}

const out = { experimental: client.getServerCapabilities()?.experimental ?? {} };
const sent = JSON.parse(parley("send", "bob", "build is red", "--priority", "high", "--agent", "alice", "--json"));
out.sentID = sent.message_id;
out.push = (await next("notifications/claude/channel")).params;

await client.notification({
  method: "notifications/claude/channel/permission_request",
  params: { request_id: "abcde", tool_name: "Bash", description: "run the tests", input_preview: '{"command":"make test"}' },
});
let pending = [];
for (const deadline = Date.now() + 20000; pending.length === 0; ) {
  if (Date.now() > deadline) throw new Error("the relayed prompt never reached the inbox");
  pending = JSON.parse(parley("permissions", "--json")).permissions ?? [];
}
out.request = pending[0].request;
parley("allow", pending[0].request.request_id);
out.verdict = (await next("notifications/claude/channel/permission")).params;
console.log(JSON.stringify(out));
await client.close();

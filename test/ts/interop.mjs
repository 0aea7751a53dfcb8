// Two agents, each through its own `parley mcp serve`, driven by the official
// TypeScript MCP SDK: bob blocks in wait_for_message, alice sends, bob wakes.
// Prints one JSON object with what each side saw; the Go test checks it.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [bin, workspace] = process.argv.slice(2);

async function connect(agent, role) {
  const transport = new StdioClientTransport({
    command: bin,
    args: ["mcp", "serve", "--workspace", workspace, "--agent", agent, "--role", role],
    env: { ...process.env },
    stderr: "pipe",
  });
  const client = new Client({ name: `ts-${agent}`, version: "1.0.0" });
  await client.connect(transport);
  return client;
}

const out = {};
const alice = await connect("alice", "planner");
const bob = await connect("bob", "reviewer");
out.protocolVersion = alice.transport?._protocolVersion ?? null;
out.server = alice.getServerVersion();
const tools = await alice.listTools();
out.tools = tools.tools.map((t) => t.name).sort();

let progress = 0;
const waiting = bob.callTool(
  { name: "wait_for_message", arguments: { timeout: 20 } },
  undefined,
  { onprogress: () => { progress++; }, timeout: 60000 },
);
await new Promise((r) => setTimeout(r, 300));
const sent = await alice.callTool({
  name: "send_message",
  arguments: { to: "@reviewer", content: "hello from TypeScript", priority: "high" },
});
out.sent = sent.structuredContent;
const got = await waiting;
out.received = got.structuredContent;
out.receivedText = got.content?.[0]?.text ?? null;
out.progress = progress;

const bad = await alice.callTool({ name: "send_message", arguments: { to: "bob", content: "x", priority: "loud" } });
out.badIsError = bad.isError === true;
out.badText = bad.content?.[0]?.text ?? "";

await alice.close();
await bob.close();
console.log(JSON.stringify(out));

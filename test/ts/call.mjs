// Calls one tool through `parley mcp serve ARGS...` the way a client built on
// the official TypeScript SDK does by default: no progress token, and the
// SDK's own request timeout (60 s). Prints {"result": ...} or {"error": ...}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [bin, tool, args, ...serve] = process.argv.slice(2);
const client = new Client({ name: "ts-call", version: "1.0.0" });
await client.connect(new StdioClientTransport({
  command: bin,
  args: ["mcp", "serve", ...serve],
  env: { ...process.env },
  stderr: "inherit",
}));
const started = Date.now();
let out;
try {
  const res = await client.callTool({ name: tool, arguments: JSON.parse(args) });
  out = { result: res.structuredContent ?? null, isError: res.isError ?? false };
} catch (err) {
  out = { error: String(err?.message ?? err) };
}
out.seconds = (Date.now() - started) / 1000;
console.log(JSON.stringify(out));
await client.close();

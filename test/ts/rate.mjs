// Sequential tool calls from the official TypeScript SDK client through a
// stdio MCP server, for parley-bench's bridge scenario:
//   node rate.mjs SECONDS TOOL ARGS_JSON COMMAND [ARG...]
// prints {"rate": calls_per_second}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [, , secs, tool, argsJSON, command, ...args] = process.argv;
const transport = new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" });
const client = new Client({ name: "parley-bench", version: "1" });
await client.connect(transport);
const call = async () => {
  const r = await client.callTool({ name: tool, arguments: JSON.parse(argsJSON) });
  if (r.isError) throw new Error(`${tool}: ${JSON.stringify(r.content)}`);
};
for (let i = 0; i < 50; i++) await call();
const start = performance.now();
const end = start + Number(secs) * 1000;
let n = 0;
while (performance.now() < end) {
  await call();
  n++;
}
console.log(JSON.stringify({ rate: n / ((performance.now() - start) / 1000) }));
await client.close();

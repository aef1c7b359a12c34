// The TypeScript SDK's experimental remote server as a gateway, for the remote cells.
//
//   node server.mjs --modules <npm prefix> --listen <port> -- <agent command...>
//
// `AcpServer` from `@agentclientprotocol/sdk/experimental/server` behind Node's http server
// (`experimental/node`'s `createNodeHttpHandler`) on 127.0.0.1, one agent process per remote
// connection (its stdio joined to the connection's stream, its stdin ended when the connection
// ends). Both profiles on one endpoint: Streamable HTTP through `createNodeHttpHandler`, and the
// WebSocket profile through `createNodeWebSocketUpgradeHandler` with the `ws` package's server
// (the SDK's documented pairing: `new WebSocketServer({ noServer: true })`). No authentication
// (the SDK leaves it to the host); the client's bearer token is ignored. Prints
// `{"url": "http://127.0.0.1:PORT/acp"}` once it listens (a WebSocket client uses the same URL
// with `ws://`) and serves until its stdin closes.
import { spawn } from "node:child_process";
import http from "node:http";
import { Readable, Writable } from "node:stream";
import { importFrom, parseArgs } from "./common.mjs";

const opts = parseArgs(process.argv.slice(2), ["modules"]);
if (opts.rest.length === 0) throw new Error("no agent command after --");
const acp = await importFrom(opts.modules, "@agentclientprotocol/sdk");
const { AcpServer } = await importFrom(opts.modules, "@agentclientprotocol/sdk/experimental/server");
const { createNodeHttpHandler, createNodeWebSocketUpgradeHandler } = await importFrom(
  opts.modules,
  "@agentclientprotocol/sdk/experimental/node",
);
// `ws` is CommonJS: resolved by `require`, its classes are on the default export.
const { WebSocketServer } = (await importFrom(opts.modules, "ws")).default;

const children = new Set();

const gateway = {
  connect(stream) {
    const child = spawn(opts.rest[0], opts.rest.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
    children.add(child);
    const closed = new Promise((resolve) => child.on("exit", () => (children.delete(child), resolve())));
    const agent = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
    stream.readable.pipeTo(agent.writable).catch(() => child.stdin.end());
    agent.readable.pipeTo(stream.writable).catch(() => {});
    return { closed };
  },
};

const server = new AcpServer({ createAgent: () => gateway });
const listener = http.createServer(createNodeHttpHandler(server));
listener.on("upgrade", createNodeWebSocketUpgradeHandler(server, new WebSocketServer({ noServer: true })));
listener.listen(Number(opts.listen ?? 0), "127.0.0.1", () => {
  const { port } = listener.address();
  process.stdout.write(JSON.stringify({ url: `http://127.0.0.1:${port}/acp` }) + "\n");
});

process.stdin.resume();
process.stdin.on("end", async () => {
  await server.close().catch(() => {});
  listener.close();
  for (const child of children) child.stdin.end();
  setTimeout(() => process.exit(0), 2000).unref();
});

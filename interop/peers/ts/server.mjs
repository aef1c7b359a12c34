// The TypeScript SDK's experimental remote server as a gateway, for the remote cells.
//
//   node server.mjs --modules <npm prefix> --listen <port> -- <agent command...>
//
// `AcpServer` from `@agentclientprotocol/sdk/experimental/server` behind Node's http server
// (`experimental/node`'s `createNodeHttpHandler`) on 127.0.0.1, one agent process per remote
// connection (its stdio joined to the connection's stream, its stdin ended when the connection
// ends). Streamable HTTP only: the SDK's WebSocket side needs the `ws` package's server, which the
// interop install does not have. No authentication (the SDK leaves it to the host); the client's
// bearer token is ignored. Prints `{"url": "http://127.0.0.1:PORT/acp"}` once it listens and
// serves until its stdin closes.
import { spawn } from "node:child_process";
import http from "node:http";
import { Readable, Writable } from "node:stream";
import { importFrom, parseArgs } from "./common.mjs";

const opts = parseArgs(process.argv.slice(2), ["modules"]);
if (opts.rest.length === 0) throw new Error("no agent command after --");
const acp = await importFrom(opts.modules, "@agentclientprotocol/sdk");
const { AcpServer } = await importFrom(opts.modules, "@agentclientprotocol/sdk/experimental/server");
const { createNodeHttpHandler } = await importFrom(opts.modules, "@agentclientprotocol/sdk/experimental/node");

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

// The TypeScript interop client, built with @agentclientprotocol/sdk 2.x builder apps.
//
//   node client.mjs --modules <npm prefix> --script <script.json> --cwd <workspace> -- <agent command...>
//   node client.mjs --modules <npm prefix> --script <script.json> --cwd <workspace> --url <url> --token <token>
//
// Spawns the agent (or reaches it with the SDK's experimental remote clients: `http://` with
// `experimental/http-client`, `ws://` with `experimental/ws-client` over Node's WebSocket, which
// Node 20 has behind `--experimental-websocket`), runs initialize -> bad calls -> session/new -> prompt (text, image and
// resource blocks) -> a second prompt it cancels with session/cancel -> a third it withdraws
// with $/cancel_request -> session/load, serving permission, fs and terminal requests, and
// prints every event (each update it receives included) as one JSON line on stdout.
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { errorCode, importFrom, loadScript, parseArgs } from "./common.mjs";

const opts = parseArgs(process.argv.slice(2));
const acp = await importFrom(opts.modules, "@agentclientprotocol/sdk");
const script = loadScript(opts.script);
const cwd = path.resolve(opts.cwd);
if (opts.rest.length === 0 && !opts.url) throw new Error("no agent command after -- (or --url)");

const out = (event) => process.stdout.write(JSON.stringify(event) + "\n");
const state = { turn: null, holdAbort: null };

function inside(p) {
  const resolved = path.resolve(p);
  if (resolved !== cwd && !resolved.startsWith(cwd + path.sep)) {
    throw acp.RequestError.invalidParams({ path: p }, "path outside the workspace");
  }
  return resolved;
}

/** Terminals: real child processes, output collected up to the byte limit. */
const terminals = new Map();
let terminalCount = 0;

function createTerminal(params) {
  const id = `term-${++terminalCount}`;
  const child = spawn(params.command, params.args ?? [], { cwd: params.cwd ?? cwd, stdio: ["ignore", "pipe", "pipe"] });
  const term = { child, output: "", limit: params.outputByteLimit ?? 1 << 20, truncated: false, exit: null };
  const collect = (chunk) => {
    term.output += chunk.toString("utf8");
    if (Buffer.byteLength(term.output) > term.limit) {
      term.output = term.output.slice(-term.limit);
      term.truncated = true;
    }
  };
  child.stdout.on("data", collect);
  child.stderr.on("data", collect);
  term.exited = new Promise((resolve) => {
    child.on("close", (code, signal) => {
      term.exit = { exitCode: code, signal };
      resolve(term.exit);
    });
  });
  terminals.set(id, term);
  out({ event: "terminal_create", command: params.command, args: params.args ?? [] });
  return { terminalId: id };
}

function terminal(id) {
  const term = terminals.get(id);
  if (!term) throw acp.RequestError.resourceNotFound(id);
  return term;
}

/** Node's WebSocket (undici) with the constructor shape the SDK expects (`ws`'s: headers). */
function nodeWebSocket() {
  if (typeof globalThis.WebSocket !== "function") throw new Error("no WebSocket: run node with --experimental-websocket");
  return class extends globalThis.WebSocket {
    constructor(url, protocols, options) {
      super(url, { protocols, headers: options?.headers });
    }
  };
}

async function remoteStream(url, token) {
  const headers = { Authorization: `Bearer ${token}` };
  if (url.startsWith("ws://") || url.startsWith("wss://")) {
    const ws = await importFrom(opts.modules, "@agentclientprotocol/sdk/experimental/ws-client");
    return ws.createWebSocketStream(url, { headers, WebSocket: nodeWebSocket() });
  }
  const http = await importFrom(opts.modules, "@agentclientprotocol/sdk/experimental/http-client");
  return http.createHttpStream(url, { headers });
}

const child = opts.url ? null : spawn(opts.rest[0], opts.rest.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
const exited = child ? new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal }))) : null;
const stream = child
  ? acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout))
  : await remoteStream(opts.url, opts.token);
if (!child) out({ event: "connected", url: opts.url });

const app = acp
  .client({ name: "ts-interop-client" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    out({ event: "update", turn: state.turn, sessionId: params.sessionId, update: params.update });
    const u = params.update;
    if (state.turn === "3" && u.sessionUpdate === "agent_message_chunk" && u.content?.text === script.holdingMessage) {
      state.holdAbort?.abort();
    }
  })
  .onRequest(acp.methods.client.session.requestPermission, async ({ params, agent }) => {
    if (state.turn === "2") {
      await agent.notify(acp.methods.agent.session.cancel, { sessionId: params.sessionId });
      out({ event: "cancel_sent", turn: state.turn });
      out({ event: "permission", turn: state.turn, toolCallId: params.toolCall.toolCallId, outcome: "cancelled" });
      return { outcome: { outcome: "cancelled" } };
    }
    const want = params.toolCall.kind === "delete" ? "reject_once" : "allow_once";
    const option = params.options.find((o) => o.kind === want) ?? params.options[0];
    out({ event: "permission", turn: state.turn, toolCallId: params.toolCall.toolCallId, outcome: "selected", optionId: option.optionId });
    return { outcome: { outcome: "selected", optionId: option.optionId } };
  })
  .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
    out({ event: "fs_read", path: params.path });
    return { content: readFileSync(inside(params.path), "utf8") };
  })
  .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => {
    out({ event: "fs_write", path: params.path });
    writeFileSync(inside(params.path), params.content);
    return {};
  })
  .onRequest(acp.methods.client.terminal.create, ({ params }) => createTerminal(params))
  .onRequest(acp.methods.client.terminal.output, ({ params }) => {
    const term = terminal(params.terminalId);
    return { output: term.output, truncated: term.truncated, exitStatus: term.exit };
  })
  .onRequest(acp.methods.client.terminal.waitForExit, async ({ params }) => terminal(params.terminalId).exited)
  .onRequest(acp.methods.client.terminal.kill, ({ params }) => {
    terminal(params.terminalId).child.kill("SIGKILL");
    return {};
  })
  .onRequest(acp.methods.client.terminal.release, ({ params }) => {
    const term = terminal(params.terminalId);
    if (!term.exit) term.child.kill("SIGKILL");
    terminals.delete(params.terminalId);
    return {};
  });

/** Lets queued notification handlers run before a prompt's result is reported. */
const drain = () => new Promise((resolve) => setImmediate(resolve));

async function bad_call(agent, name, method, params) {
  try {
    await agent.request(method, params);
    out({ event: "error", bad_call: name, code: null });
  } catch (e) {
    out({ event: "error", bad_call: name, code: errorCode(e) });
  }
}

await app.connectWith(stream, async (agent) => {
  const init = await agent.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: {
      fs: { readTextFile: true, writeTextFile: true },
      terminal: true,
      session: { notices: {}, compaction: {} },
    },
    clientInfo: { name: "ts-interop-client", version: "2.4.0" },
  });
  out({ event: "initialized", protocolVersion: init.protocolVersion, loadSession: init.agentCapabilities?.loadSession ?? false });

  const { sessionId } = await agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
  out({ event: "session", sessionId });
  await bad_call(agent, "unknown_method", script.unknownMethod, {});
  await bad_call(agent, "invalid_params", acp.methods.agent.session.prompt, { sessionId, prompt: "not a list of blocks" });

  state.turn = "1";
  const first = await agent.request(acp.methods.agent.session.prompt, {
    sessionId,
    prompt: [
      { type: "text", text: script.prompts.work },
      { type: "image", mimeType: script.image.mimeType, data: script.image.data },
      { type: "resource", resource: { uri: script.resourceUri, mimeType: "text/markdown", text: script.resourceText } },
    ],
  });
  await drain();
  out({ event: "stop", turn: "1", stopReason: first.stopReason });

  state.turn = "2";
  const second = await agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: script.prompts.cancel }] });
  await drain();
  out({ event: "stop", turn: "2", stopReason: second.stopReason });

  state.turn = "3";
  state.holdAbort = new AbortController();
  try {
    const third = await agent.request(
      acp.methods.agent.session.prompt,
      { sessionId, prompt: [{ type: "text", text: script.prompts.hold }] },
      { cancellationSignal: state.holdAbort.signal },
    );
    await drain();
    out({ event: "stop", turn: "3", stopReason: third.stopReason });
  } catch (e) {
    await drain();
    out({ event: "request_cancelled", turn: "3", code: errorCode(e) });
  }

  if (init.agentCapabilities?.loadSession) {
    state.turn = "load";
    await agent.request(acp.methods.agent.session.load, { sessionId, cwd, mcpServers: [] });
    await drain();
    out({ event: "loaded", sessionId });
  }
  state.turn = null;
});
if (child) {
  // The connection is over: end the agent's stdin so it sees EOF and exits.
  child.stdin.end();
  let timer;
  const status = await Promise.race([exited, new Promise((resolve) => (timer = setTimeout(() => resolve(null), 5000)))]);
  clearTimeout(timer);
  if (status === null) child.kill("SIGKILL");
  out({ event: "agent_exit", code: status?.code ?? null, signal: status?.signal ?? null });
} else {
  // Remote: the connection's end (DELETE / close frame) ends the server's agent process; the tap
  // behind the server records its exit.
  out({ event: "agent_exit", code: null, signal: null, note: "remote" });
}
out({ event: "done" });
process.exit(0);

// The TypeScript interop client for draft protocol v2, built with @agentclientprotocol/sdk
// 2.x's `experimental/v2` builder app.
//
//   node client_v2.mjs --modules <npm prefix> --script <script.v2.json> --cwd <workspace> -- <agent command...>
//
// Spawns the agent and follows interop/peers/script.v2.json: initialize (version 2) ->
// session/new -> one prompt, answering the permission request with the script's allow option,
// until the idle `state_update` ends the turn. Prints every event (each update it receives
// included) as one JSON line on stdout.
import { spawn } from "node:child_process";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { importFrom, loadScript, parseArgs } from "./common.mjs";

const opts = parseArgs(process.argv.slice(2));
const acp = await importFrom(opts.modules, "@agentclientprotocol/sdk/experimental/v2");
const script = loadScript(opts.script);
const cwd = path.resolve(opts.cwd);
if (opts.rest.length === 0) throw new Error("no agent command after --");

const out = (event) => process.stdout.write(JSON.stringify(event) + "\n");
let idle;
const turnEnded = new Promise((resolve) => (idle = resolve));

const child = spawn(opts.rest[0], opts.rest.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

const app = acp
  .client({ name: "ts-interop-client-v2" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    out({ event: "update", sessionId: params.sessionId, update: params.update });
    const u = params.update;
    if (u.sessionUpdate === "state_update" && u.state === "idle" && u.stopReason) {
      out({ event: "stop", stopReason: u.stopReason });
      idle();
    }
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    const option = params.options.find((o) => o.optionId === script.allowOption) ?? params.options[0];
    out({ event: "permission", title: params.title, subject: params.subject ?? null, outcome: "selected", optionId: option.optionId });
    return { outcome: { outcome: "selected", optionId: option.optionId } };
  });

const timeout = (ms, what) => new Promise((_, reject) => setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms).unref());

await app.connectWith(stream, async (agent) => {
  const init = await agent.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    info: { name: "ts-interop-client-v2", version: "2.4.0" },
    capabilities: {},
  });
  out({ event: "initialized", protocolVersion: init.protocolVersion, agent: init.info?.name ?? null });
  const { sessionId } = await agent.request(acp.methods.agent.session.new, { cwd });
  out({ event: "session", sessionId });
  const inserted = await agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: script.prompt }] });
  out({ event: "inserted", messageId: inserted.messageId });
  await Promise.race([turnEnded, timeout(10000, "idle state_update")]);
});
// The connection is over: end the agent's stdin so it sees EOF and exits.
child.stdin.end();
let timer;
const status = await Promise.race([exited, new Promise((resolve) => (timer = setTimeout(() => resolve(null), 5000)))]);
clearTimeout(timer);
if (status === null) child.kill("SIGKILL");
out({ event: "agent_exit", code: status?.code ?? null, signal: status?.signal ?? null });
out({ event: "done" });
process.exit(0);

// The TypeScript interop agent for draft protocol v2, built with @agentclientprotocol/sdk
// 2.x's `experimental/v2` builder app.
//
//   node agent_v2.mjs --modules <npm prefix> --script <script.v2.json> [--report <file>] [--v1-script <script.json>]
//
// It follows interop/peers/script.v2.json: one turn that streams the script's updates, asks
// permission and ends with an idle `state_update`. With `--v1-script` it is the SDK's
// `AgentProtocolRouter` serving this v2 agent and the v1 agent of agent.mjs (`--v1-script
// <script.json>`), so a client's `initialize` picks the version. What it saw goes to the
// report file.
import { Readable, Writable } from "node:stream";
import { importFrom, loadScript, parseArgs, reporter } from "./common.mjs";
import { v1AgentApp } from "./agent_v1_app.mjs";

const opts = parseArgs(process.argv.slice(2));
const acp = await importFrom(opts.modules, "@agentclientprotocol/sdk/experimental/v2");
const script = loadScript(opts.script);
const report = reporter(opts.report);
const SDK = "typescript";

let sessions = 0;

async function send(client, sessionId, update) {
  await client.notify(acp.methods.client.session.update, { sessionId, update });
}

async function work(client, sessionId, prompt) {
  const [first, ...rest] = script.before;
  await send(client, sessionId, first);
  await send(client, sessionId, { sessionUpdate: "user_message", messageId: script.userMessageId, content: prompt });
  for (const update of rest) await send(client, sessionId, update);
  const response = await client.request(acp.methods.client.session.requestPermission, { sessionId, ...script.permission });
  report({ event: "permission", outcome: response.outcome });
  for (const update of script.after) await send(client, sessionId, update);
}

const v2 = acp
  .agent({ name: "ts-interop-agent-v2" })
  .onRequest(acp.methods.agent.initialize, ({ params }) => {
    report({ event: "initialize", protocolVersion: params.protocolVersion, info: params.info });
    return { protocolVersion: 2, info: { name: "ts-interop-agent-v2", version: "2.4.0" }, capabilities: {} };
  })
  .onRequest(acp.methods.agent.session.new, () => ({ sessionId: `ts-v2-session-${++sessions}` }))
  .onRequest(acp.methods.agent.session.list, () => ({ sessions: [] }))
  .onRequest(acp.methods.agent.session.close, () => ({}))
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
    const text = params.prompt.filter((b) => b.type === "text").map((b) => b.text).join(" ");
    report({ event: "prompt", blocks: params.prompt.map((b) => b.type), text });
    await work(client, params.sessionId, params.prompt);
    return { messageId: script.userMessageId };
  })
  .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
    report({ event: "session_cancel", sessionId: params.sessionId });
  });

const stream = acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
let closed;
if (opts["v1-script"]) {
  const v1 = await importFrom(opts.modules, "@agentclientprotocol/sdk");
  const v1App = v1AgentApp(v1, loadScript(opts["v1-script"]), report);
  closed = acp.agentProtocolRouter().withV1(v1App).withV2(v2).connect(stream).closed;
} else {
  closed = v2.connect(stream).closed;
}
await closed;
report({ event: "closed", sdk: SDK });
process.exit(0);

// The TypeScript interop agent, built with @agentclientprotocol/sdk 2.x builder apps.
//
//   node agent.mjs --modules <npm prefix> --script <script.json> [--report <file>]
//
// The agent itself is agent_v1_app.mjs (shared with agent_v2.mjs's protocol router); this
// serves it on stdio and reports when the connection closes.
import { Readable, Writable } from "node:stream";
import { importFrom, loadScript, parseArgs, reporter } from "./common.mjs";
import { v1AgentApp } from "./agent_v1_app.mjs";

const opts = parseArgs(process.argv.slice(2));
const acp = await importFrom(opts.modules, "@agentclientprotocol/sdk");
const report = reporter(opts.report);
const SDK = "typescript";
const app = v1AgentApp(acp, loadScript(opts.script), report);

const connection = app.connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
await connection.closed;
report({ event: "closed", sdk: SDK });
// Pending cancel-wait timers must not keep the process alive once the client is gone.
process.exit(0);

// The benchmark client on the official TypeScript SDK (@agentclientprotocol/sdk), written the
// way its docs show: a builder app that spawns the agent, serves fs reads and permission
// requests, and checks every streamed chunk. It runs one measurement (the plan) and prints its
// outcome as one JSON line on stdout, which acp-bench reads (benches/src/foreign.rs).
//
//   node client.mjs --modules <npm prefix> --plan <plan> -- <agent command...>
//
// Plans: `handshake` (f), `job <prompt text>` (a, b, d), `many <sessions> <chunks>` (g),
// `exchange` (h).
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { CWD, REPORT_KEY, contentFor, parseArgs, percentile, sdk, unixNanos } from "./common.mjs";

const opts = parseArgs(process.argv.slice(2));
const acp = await sdk(opts.modules);
const [kind, ...planArgs] = (opts.plan ?? "").split(" ");

/** In-order chunk counting (a), or per-session timed chunks (g). */
const check = { next: 0, wrong: 0, perSession: null };

function onChunk(sessionId, text) {
  if (check.perSession) {
    const now = unixNanos();
    const track = check.perSession.get(sessionId);
    const m = text === null ? null : /^tok(\d+)@(\d+) $/.exec(text);
    if (!track) check.wrong++;
    else if (m && Number(m[1]) === track.next) {
      track.next++;
      track.latencies.push(Number(now - BigInt(m[2])));
      track.firstAt ??= now;
    } else track.wrong++;
    return;
  }
  if (text === `tok${check.next} `) check.next++;
  else check.wrong++;
}

// f and h are timed from just before the agent is spawned, as for every column.
const start = process.hrtime.bigint();
const child = spawn(opts.rest[0], opts.rest.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
const exited = new Promise((resolve) => child.on("exit", resolve));
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

const app = acp
  .client({ name: "acp-bench" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    const u = params.update;
    const text = u.sessionUpdate === "agent_message_chunk" && u.content?.type === "text" ? u.content.text : null;
    onChunk(params.sessionId, text);
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    const allow = params.options.find((o) => o.kind === "allow_once");
    if (!allow) throw acp.RequestError.invalidParams({}, "no allow option");
    return { outcome: { outcome: "selected", optionId: allow.optionId } };
  })
  .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
    const content = contentFor(params.path);
    if (content === null) throw acp.RequestError.resourceNotFound(params.path);
    return { content };
  });

const outcome = { elapsed_ns: 0, report: null, after: null, chunks: [0, 0], many: null };

async function prompt(agent, sessionId, text) {
  const r = await agent.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] });
  const report = r._meta?.[REPORT_KEY];
  if (!report) throw new Error("no report in the answer");
  return report;
}

await app.connectWith(stream, async (agent) => {
  await agent.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: true } },
    clientInfo: { name: "acp-bench", version: "0" },
  });
  if (kind === "handshake") {
    outcome.elapsed_ns = Number(process.hrtime.bigint() - start);
    return;
  }
  const newSession = async () => (await agent.request(acp.methods.agent.session.new, { cwd: CWD, mcpServers: [] })).sessionId;
  const sessionId = await newSession();
  if (kind === "job") {
    const t = process.hrtime.bigint();
    outcome.report = await prompt(agent, sessionId, planArgs.join(" "));
    outcome.elapsed_ns = Number(process.hrtime.bigint() - t);
    outcome.chunks = [check.next, check.wrong];
  } else if (kind === "many") {
    const [count, chunks] = planArgs.map(Number);
    const ids = [];
    for (let i = 0; i < count; i++) ids.push(await newSession());
    check.perSession = new Map(ids.map((id) => [id, { next: 0, wrong: 0, latencies: [], firstAt: null }]));
    const promptedAt = unixNanos();
    const t = process.hrtime.bigint();
    const reports = await Promise.all(ids.map((id) => prompt(agent, id, `tstream ${chunks}`)));
    outcome.elapsed_ns = Number(process.hrtime.bigint() - t);
    outcome.report = { count: 0, errors: 0, elapsed_ns: 0, p50_ns: 0, p99_ns: 0, bytes: 0, rss_kib: 0, hwm_kib: 0 };
    for (const r of reports) {
      outcome.report.count += r.count;
      outcome.report.errors += r.errors;
    }
    const p99s = [];
    const many = { sessions: ids.length, in_order: 0, errors: check.wrong, median_session_p99_ns: 0, worst_session_p99_ns: 0, worst_first_chunk_ns: 0 };
    for (const track of check.perSession.values()) {
      many.in_order += track.next;
      many.errors += track.wrong;
      track.latencies.sort((a, b) => a - b);
      p99s.push(percentile(track.latencies, 99));
      const first = track.firstAt === null ? Number.MAX_SAFE_INTEGER : Number(track.firstAt - promptedAt);
      many.worst_first_chunk_ns = Math.max(many.worst_first_chunk_ns, first);
    }
    p99s.sort((a, b) => a - b);
    many.median_session_p99_ns = percentile(p99s, 50);
    many.worst_session_p99_ns = p99s.at(-1) ?? 0;
    outcome.many = many;
  } else if (kind === "exchange") {
    outcome.report = await prompt(agent, sessionId, "exchange");
    return;
  } else {
    throw new Error(`unknown plan ${opts.plan}`);
  }
  outcome.after = await prompt(agent, sessionId, "mem");
});
// The connection is over: end the agent's stdin so it sees EOF and exits.
child.stdin.end();
await exited;
if (kind === "exchange") outcome.elapsed_ns = Number(process.hrtime.bigint() - start);
process.stdout.write(JSON.stringify(outcome) + "\n");

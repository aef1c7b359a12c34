// The benchmark agent on the official TypeScript SDK (@agentclientprotocol/sdk), written the
// way its docs show: a builder app whose prompt handler streams with `client.notify` and calls
// the client with `client.request`. It runs the job the prompt's text names and answers with a
// report in `_meta.acpBench` (benches/src/msg.rs: `Job`, `Report`).
//
//   node agent.mjs --modules <npm prefix>
import { Readable, Writable } from "node:stream";
import {
  EXCHANGE_UPDATES, REPORT_KEY, SMALL_CONTENT, SMALL_PATH, memory, parseArgs, parseJob, percentile, sdk, unixNanos,
} from "./common.mjs";

const opts = parseArgs(process.argv.slice(2));
const acp = await sdk(opts.modules);
const sessions = new Set();
let next = 0;

const chunk = (client, sessionId, text) =>
  client.notify(acp.methods.client.session.update, {
    sessionId,
    update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } },
  });

async function reads(client, sessionId, n, path, size, report) {
  const samples = [];
  for (let i = 0; i < n; i++) {
    const t = process.hrtime.bigint();
    let ok = false;
    try {
      const r = await client.request(acp.methods.client.fs.readTextFile, { sessionId, path });
      ok = r.content.length === size;
    } catch {}
    samples.push(Number(process.hrtime.bigint() - t));
    report.count++;
    if (ok) report.bytes += size;
    else report.errors++;
  }
  samples.sort((a, b) => a - b);
  report.p50_ns = percentile(samples, 50);
  report.p99_ns = percentile(samples, 99);
}

async function run(client, sessionId, text) {
  const job = parseJob(text);
  const report = { count: 0, errors: 0, elapsed_ns: 0, p50_ns: 0, p99_ns: 0, bytes: 0, rss_kib: 0, hwm_kib: 0 };
  const start = process.hrtime.bigint();
  switch (job.verb) {
    case "stream":
      for (let i = 0; i < job.n; i++) {
        await chunk(client, sessionId, `tok${i} `);
        report.count++;
      }
      break;
    case "tstream":
      for (let i = 0; i < job.n; i++) {
        await chunk(client, sessionId, `tok${i}@${unixNanos()} `);
        report.count++;
      }
      break;
    case "seq":
      await reads(client, sessionId, job.n, SMALL_PATH, SMALL_CONTENT.length, report);
      break;
    case "big":
      await reads(client, sessionId, job.n, `/bench/big/${job.size}`, job.size, report);
      break;
    case "exchange": {
      for (let i = 0; i < EXCHANGE_UPDATES; i++) {
        await chunk(client, sessionId, `tok${i} `);
        report.count++;
      }
      const answer = await client.request(acp.methods.client.session.requestPermission, {
        sessionId,
        toolCall: { toolCallId: "call-1" },
        options: [
          { optionId: "allow", name: "Allow", kind: "allow_once" },
          { optionId: "reject", name: "Reject", kind: "reject_once" },
        ],
      });
      if (answer.outcome.outcome === "selected" && answer.outcome.optionId === "allow") report.count++;
      else report.errors++;
      const one = { count: 0, errors: 0, bytes: 0 };
      await reads(client, sessionId, 1, SMALL_PATH, SMALL_CONTENT.length, one);
      report.count += one.count;
      report.errors += one.errors;
      report.bytes += one.bytes;
      break;
    }
    case "mem":
      break;
    default:
      throw acp.RequestError.invalidParams({ text }, "the prompt is not a benchmark job");
  }
  report.elapsed_ns = Number(process.hrtime.bigint() - start);
  [report.rss_kib, report.hwm_kib] = memory();
  return { stopReason: "end_turn", _meta: { [REPORT_KEY]: report } };
}

const app = acp
  .agent({ name: "acp-bench" })
  .onRequest(acp.methods.agent.initialize, ({ params }) => ({
    protocolVersion: params.protocolVersion,
    agentCapabilities: {},
    agentInfo: { name: "acp-bench", version: "0" },
  }))
  .onRequest(acp.methods.agent.session.new, () => {
    const n = next++;
    const sessionId = `${(Math.floor(n / 2 ** 48)).toString(16).padStart(8, "0")}-0000-4000-8000-${(n % 2 ** 48).toString(16).padStart(12, "0")}`;
    sessions.add(sessionId);
    return { sessionId };
  })
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
    if (!sessions.has(params.sessionId)) throw acp.RequestError.resourceNotFound(params.sessionId);
    const text = params.prompt.find((b) => b.type === "text")?.text ?? "";
    return run(client, params.sessionId, text);
  });

const connection = app.connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
await connection.closed;
process.exit(0);

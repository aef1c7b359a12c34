// Shared by the TypeScript benchmark peers: loading the SDK from the interop install cache,
// the job a prompt names, the agent's report, memory and the wall clock (see benches/src/msg.rs,
// which these mirror: the same texts, the same report fields).
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

/** Imports `@agentclientprotocol/sdk` installed under `<modules>/node_modules`. */
export async function sdk(modules) {
  const require = createRequire(`${modules}/package.json`);
  return import(pathToFileURL(require.resolve("@agentclientprotocol/sdk")).href);
}

/** `--name value` pairs up to `--`; what follows `--` is `rest`. */
export function parseArgs(argv) {
  const opts = { rest: [] };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--") {
      opts.rest = argv.slice(i + 1);
      break;
    }
    opts[argv[i].replace(/^--/, "")] = argv[++i];
  }
  if (!opts.modules) throw new Error("missing --modules <npm prefix of the interop cache>");
  return opts;
}

export const CWD = "/tmp/acp-bench";
export const SMALL_PATH = "/bench/small.rs";
export const SMALL_CONTENT = 'fn main() {\n    println!("hello");\n}\n';
export const REPORT_KEY = "acpBench";
export const EXCHANGE_UPDATES = 5;

const LINE = '    let answer = compute("agent client protocol", 42); // line\n';

/** The content the client serves for `path`, or null. */
export function contentFor(path) {
  if (path === SMALL_PATH) return SMALL_CONTENT;
  const m = /^\/bench\/big\/(\d+)$/.exec(path);
  if (!m) return null;
  const size = Number(m[1]);
  return LINE.repeat(Math.ceil(size / LINE.length)).slice(0, size);
}

/** Nanoseconds since the Unix epoch (microsecond precision), as a BigInt. */
export function unixNanos() {
  return BigInt(Math.round((performance.timeOrigin + performance.now()) * 1000)) * 1000n;
}

/** The prompt text's job: {verb, n, k, size}. */
export function parseJob(text) {
  const [verb, a, b] = text.trim().split(/\s+/);
  return { verb, n: Number(a ?? 0), size: Number(b ?? 0) };
}

/** `[VmRSS, VmHWM]` in KiB. */
export function memory() {
  const status = readFileSync("/proc/self/status", "utf8");
  const field = (name) => Number((new RegExp(`^${name}:\\s+(\\d+)`, "m").exec(status) ?? [0, 0])[1]);
  return [field("VmRSS"), field("VmHWM")];
}

/** The p-th percentile (nearest rank) of sorted numbers. */
export function percentile(sorted, p) {
  if (sorted.length === 0) return 0;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(Math.max(rank, 1), sorted.length) - 1];
}

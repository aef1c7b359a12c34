// Validates recorded wire transcripts against the official ACP JSON Schemas, read from the
// installed npm package (`@agentclientprotocol/sdk/schema/v1/schema.json`, `schema.unstable.json`
// for the hops of a proxy chain, and `schema/v2/schema.json` for the cells that settle on
// protocol v2), never vendored.
//
//   node validate.mjs --modules <npm prefix> -- <cells.json>
//
// cells.json: [{ "name", "wire": "<wire.jsonl>", "exempt": [seq...], "schema"?: "unstable" | "v2",
// "v2Seqs"?: [seq...], "hop"?: true }]. `v2Seqs` are the messages of a v1 cell checked against
// the v2 schema (a both-versions client's v2 `initialize` offer before it falls back to v1). Every message of both sides is checked against the definition its position
// calls for: the envelope of the side that wrote it (`Agent` / `Client` / `ProtocolLevel` in the
// schema's root `anyOf`), request and notification params by method (`x-method`), results by
// the method of the request they answer, errors against `Error`. `exempt` lists the
// deliberately bad calls. A `hop` (a conductor and one component of a proxy chain) carries
// messages of every role, so its envelope is any of the root's; a `proxy/successor` envelope is
// checked and so is the message it wraps (params by the wrapped method, and the answer to a
// wrapped request by that method's result). Prints one JSON object:
// { "schema", "schemas": {v1, v2}, "definitions", "cells": { "<cell>": { "client": {checked,
// failures}, "agent": {checked, failures} } } }.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { importFrom, parseArgs } from "./common.mjs";

const opts = parseArgs(process.argv.slice(2), ["modules"]);
const require = createRequire(`${opts.modules}/package.json`);
const { default: Ajv2020 } = await importFrom(opts.modules, "ajv/dist/2020.js");
const { default: addFormats } = await importFrom(opts.modules, "ajv-formats");

const ranges = {
  int32: [-(2 ** 31), 2 ** 31 - 1],
  uint16: [0, 2 ** 16 - 1],
  uint32: [0, 2 ** 32 - 1],
  int64: [-(2 ** 63), 2 ** 63],
  uint64: [0, 2 ** 64],
};

/** One schema file (`version`: `v1` or `v2`), compiled: its definitions by method and its envelopes. */
function loadSchema(version, file) {
  const path = require.resolve(`@agentclientprotocol/sdk/schema/${version}/${file}`);
  const schema = JSON.parse(readFileSync(path, "utf8"));
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  for (const [name, [lo, hi]] of Object.entries(ranges)) {
    ajv.addFormat(name, { type: "number", validate: (n) => Number.isInteger(n) && n >= lo && n <= hi });
  }
  for (const name of ["double", "float"]) ajv.addFormat(name, { type: "number", validate: () => true });
  ajv.addSchema(schema, "acp");
  // Definitions by method: request params, notification params (`proxy/successor` is both)
  // and results.
  const requests = new Map();
  const notifications = new Map();
  const results = new Map();
  for (const [name, def] of Object.entries(schema.$defs)) {
    const method = def["x-method"];
    if (!method) continue;
    if (name.endsWith("Response")) results.set(method, name);
    else if (name.endsWith("Notification")) notifications.set(method, name);
    else requests.set(method, name);
  }
  const envelopeIndex = Object.fromEntries(schema.anyOf.map((e, i) => [e.title, i]));
  for (const title of ["Agent", "Client", "ProtocolLevel"]) {
    if (!(title in envelopeIndex)) throw new Error(`${file}: the root anyOf has no ${title} envelope`);
  }
  const compiled = new Map();
  const validator = (ref) => {
    if (!compiled.has(ref)) compiled.set(ref, ajv.compile({ $ref: ref }));
    return compiled.get(ref);
  };
  const paramsOf = (method, isRequest) =>
    (isRequest ? requests.get(method) : notifications.get(method)) ??
    (isRequest ? notifications.get(method) : requests.get(method));
  return { version, path, schema, envelopeIndex, results, paramsOf, validator };
}

const stable = loadSchema("v1", "schema.json");
const v2 = loadSchema("v2", "schema.json");
const schemas = { stable, unstable: null };
const schemaFor = (cell) => {
  if (cell.schema === "v2") return v2;
  if (cell.schema !== "unstable") return stable;
  schemas.unstable ??= loadSchema("v1", "schema.unstable.json");
  return schemas.unstable;
};

function check(s, ref, value, what, failures, seq) {
  const validate = s.validator(ref);
  if (!validate(value)) {
    const errors = validate.errors.slice(0, 5).map((e) => `${e.instancePath || "/"} ${e.message}`);
    failures.push({ seq, what, errors });
  }
}

function validateCell(cell) {
  const cellSchema = schemaFor(cell);
  const exempt = new Set(cell.exempt ?? []);
  const v2Seqs = new Set(cell.v2Seqs ?? []);
  // The wire is acp-rs's one record format (acp_rpc::record): `dir` says who sent a line;
  // records without a line (a process's start or exit) carry no message.
  const sender = { client_to_agent: "client", agent_to_client: "agent" };
  const records = readFileSync(cell.wire, "utf8")
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l))
    .filter((r) => typeof r.line === "string")
    .map((r) => ({ ...r, from: r.from ?? sender[r.dir] }));
  const msgs = records.map((r) => {
    let json = null;
    try {
      json = JSON.parse(r.line);
    } catch {}
    return { ...r, json };
  });
  // Requests by (sender, id) so a response finds its method (a wrapped request's method for
  // a `proxy/successor` request).
  const requests = new Map();
  for (const m of msgs) {
    if (m.json && m.json.method !== undefined && m.json.id !== undefined) {
      const method = m.json.method === "proxy/successor" && cell.hop ? m.json.params?.method : m.json.method;
      requests.set(`${m.from}:${JSON.stringify(m.json.id)}`, method);
    }
  }
  const out = { client: { checked: 0, failures: [], exempt: 0 }, agent: { checked: 0, failures: [], exempt: 0 } };
  for (const m of msgs) {
    const side = out[m.from];
    if (exempt.has(m.seq)) {
      side.exempt++;
      continue;
    }
    side.checked++;
    const s = v2Seqs.has(m.seq) ? v2 : cellSchema;
    const f = side.failures;
    const j = m.json;
    if (j === null || typeof j !== "object" || Array.isArray(j)) {
      f.push({ seq: m.seq, what: "not a JSON object", errors: [m.line.slice(0, 200)] });
      continue;
    }
    if (cell.hop) {
      check(s, "acp#", j, "message (any envelope)", f, m.seq);
    } else {
      const envelope = j.method === "$/cancel_request" ? "ProtocolLevel" : m.from === "agent" ? "Agent" : "Client";
      check(s, `acp#/anyOf/${s.envelopeIndex[envelope]}`, j, `${envelope} envelope`, f, m.seq);
    }
    if (j.method !== undefined) {
      const isRequest = j.id !== undefined;
      const checkParams = (method, params, what) => {
        const def = s.paramsOf(method, isRequest);
        if (!def) {
          f.push({ seq: m.seq, what: `method ${method}`, errors: [`not a ${s.version} method`] });
        } else {
          check(s, `acp#/$defs/${def}`, params, `${what}${method} params (${def})`, f, m.seq);
        }
      };
      checkParams(j.method, j.params, "");
      if (j.method === "proxy/successor" && cell.hop && typeof j.params?.method === "string") {
        checkParams(j.params.method, j.params.params, "wrapped ");
      }
    } else if ("result" in j || "error" in j) {
      const other = m.from === "agent" ? "client" : "agent";
      const method = requests.get(`${other}:${JSON.stringify(j.id)}`);
      if ("error" in j) {
        check(s, "acp#/$defs/Error", j.error, "error object", f, m.seq);
      } else if (!method) {
        f.push({ seq: m.seq, what: "result", errors: [`answers id ${JSON.stringify(j.id)}, which the ${other} never used`] });
      } else if (s.results.has(method)) {
        check(s, `acp#/$defs/${s.results.get(method)}`, j.result, `${method} result (${s.results.get(method)})`, f, m.seq);
      } else {
        f.push({ seq: m.seq, what: `${method} result`, errors: ["no result definition for this method"] });
      }
    }
  }
  return out;
}

const cells = JSON.parse(readFileSync(opts.rest[0], "utf8"));
const report = {
  schema: stable.path,
  definitions: Object.keys(stable.schema.$defs).length,
  schemas: { v1: { path: stable.path, definitions: Object.keys(stable.schema.$defs).length }, v2: { path: v2.path, definitions: Object.keys(v2.schema.$defs).length } },
  cells: {},
};
for (const cell of cells) report.cells[cell.name] = validateCell(cell);
process.stdout.write(JSON.stringify(report) + "\n");

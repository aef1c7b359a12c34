// Shared by the TypeScript interop peers: argument parsing, loading the SDK from the install
// cache (outside the source tree, so a bare `import` cannot find it), the script, and the
// report file. stdout is the protocol channel for the agent: nothing here writes to it.
import { appendFileSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

/** `--name value` pairs up to `--`; everything after `--` is `rest`. */
export function parseArgs(argv, required = ["modules", "script"]) {
  const opts = { rest: [] };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--") {
      opts.rest = argv.slice(i + 1);
      break;
    }
    if (!argv[i].startsWith("--") || i + 1 >= argv.length) {
      throw new Error(`bad argument ${argv[i]}`);
    }
    opts[argv[i].slice(2)] = argv[++i];
  }
  for (const name of required) {
    if (!opts[name]) throw new Error(`missing --${name}`);
  }
  return opts;
}

/** Imports a package installed in `<modules>/node_modules` (the interop cache). */
export async function importFrom(modules, specifier) {
  const require = createRequire(`${modules}/package.json`);
  return import(pathToFileURL(require.resolve(specifier)).href);
}

export function loadScript(path) {
  return JSON.parse(readFileSync(path, "utf8"));
}

/** Appends one JSON line per event to `path` (or stderr when there is no report file). */
export function reporter(path) {
  return (event) => {
    const line = JSON.stringify(event) + "\n";
    if (path) appendFileSync(path, line);
    else process.stderr.write(line);
  };
}

/** The JSON-RPC error code of a rejected request, or `null` if it was not an RPC error. */
export function errorCode(e) {
  return typeof e?.code === "number" ? e.code : null;
}

// The v1 TypeScript interop agent's app (@agentclientprotocol/sdk 2.x builder app), shared by
// agent.mjs (which serves it alone) and agent_v2.mjs's router (which serves it beside the v2
// agent). It follows interop/peers/script.json: turn 1 streams every update the client can
// know, asks permission (allowed, then rejected), reads and writes a file, runs a terminal if
// offered and makes bad calls to check the client's error replies; turn 2 waits for
// session/cancel; turn 3 waits for $/cancel_request. session/load replays the history. What it
// saw goes to `report`.
import { errorCode } from "./common.mjs";

/** The v1 agent app: `acp` is the SDK's v1 module, `script` script.json, `report` the reporter. */
export function v1AgentApp(acp, script, report) {
  let clientCaps = {};
  let sessionCwd = new Map();
  let sessions = 0;
  /** Session id -> resolve function of the running prompt's cancel promise. */
  const cancelWaiters = new Map();

  function gated(update) {
    const session = clientCaps.session ?? {};
    if (update.sessionUpdate === "notice" && !session.notices) return "session.notices";
    if (update.sessionUpdate.startsWith("compaction_") && !session.compaction) return "session.compaction";
    return null;
  }

  async function send(client, sessionId, update) {
    await client.notify(acp.methods.client.session.update, { sessionId, update });
  }

  async function ask(client, sessionId, toolCall) {
    const response = await client.request(acp.methods.client.session.requestPermission, {
      sessionId,
      toolCall,
      options: script.permissionOptions,
    });
    report({ event: "permission", toolCallId: toolCall.toolCallId, outcome: response.outcome });
    return response.outcome;
  }

  async function bad_call(client, name, method, params) {
    try {
      await client.request(method, params);
      report({ event: "error", bad_call: name, code: null });
    } catch (e) {
      report({ event: "error", bad_call: name, code: errorCode(e) });
    }
  }

  function text(t) {
    return { type: "content", content: { type: "text", text: t } };
  }

  async function work(client, sessionId) {
    for (const update of script.updates) {
      const capability = gated(update);
      if (capability) {
        report({ event: "skipped", update: update.sessionUpdate, why: `client did not advertise ${capability}` });
        continue;
      }
      await send(client, sessionId, update);
    }
    const cwd = sessionCwd.get(sessionId);
    const readPath = `${cwd}/${script.workspace.readFile}`;
    const writePath = `${cwd}/${script.workspace.writeFile}`;
    const edit = { toolCallId: "edit-1", title: "Copy hello.txt", kind: "edit", status: "pending", locations: [{ path: readPath }] };
    await send(client, sessionId, { sessionUpdate: "tool_call", ...edit });
    const allowed = await ask(client, sessionId, edit);
    if (allowed.outcome === "selected" && allowed.optionId.startsWith("allow")) {
      await send(client, sessionId, { sessionUpdate: "tool_call_update", toolCallId: "edit-1", status: "in_progress" });
      let content = "";
      if (clientCaps.fs?.readTextFile) {
        content = (await client.request(acp.methods.client.fs.readTextFile, { sessionId, path: readPath })).content;
        report({ event: "fs_read", path: readPath, content });
      }
      if (clientCaps.fs?.writeTextFile) {
        await client.request(acp.methods.client.fs.writeTextFile, { sessionId, path: writePath, content: script.workspace.writePrefix + content });
        report({ event: "fs_write", path: writePath });
      }
      await send(client, sessionId, { sessionUpdate: "tool_call_update", toolCallId: "edit-1", status: "completed", content: [text(content)] });
    }
    const del = { toolCallId: "delete-1", title: "Delete the workspace", kind: "delete", status: "pending" };
    await send(client, sessionId, { sessionUpdate: "tool_call", ...del });
    const rejected = await ask(client, sessionId, del);
    const failed = !(rejected.outcome === "selected" && rejected.optionId.startsWith("allow"));
    await send(client, sessionId, { sessionUpdate: "tool_call_update", toolCallId: "delete-1", status: failed ? "failed" : "completed", content: [text(failed ? "not allowed" : "deleted")] });

    if (clientCaps.terminal) {
      const term = await client.createTerminal({ sessionId, command: script.terminal.command, args: script.terminal.args, outputByteLimit: 4096 });
      await send(client, sessionId, { sessionUpdate: "tool_call", toolCallId: "term-1", title: "Run echo", kind: "execute", status: "in_progress", content: [{ type: "terminal", terminalId: term.id }] });
      const exit = await term.waitForExit();
      const output = await term.currentOutput();
      await term.release();
      report({ event: "terminal", output: output.output, exitCode: exit.exitCode ?? null });
      await send(client, sessionId, { sessionUpdate: "tool_call_update", toolCallId: "term-1", status: "completed" });
    }

    await bad_call(client, "unknown_method", script.unknownMethod, {});
    await bad_call(client, "invalid_params", acp.methods.client.fs.readTextFile, { sessionId });
    await send(client, sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "done" } });
    return { stopReason: "end_turn" };
  }

  async function cancelTurn(client, sessionId) {
    let cancelled;
    const cancel = new Promise((resolve) => {
      cancelled = resolve;
    });
    cancelWaiters.set(sessionId, cancelled);
    await send(client, sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "starting a long task" } });
    const long = { toolCallId: "long-1", title: "A long task", kind: "execute", status: "pending" };
    await send(client, sessionId, { sessionUpdate: "tool_call", ...long });
    await ask(client, sessionId, long);
    const timeout = new Promise((resolve) => setTimeout(() => resolve("timeout"), script.cancelWaitMs));
    const how = await Promise.race([cancel.then(() => "session/cancel"), timeout]);
    cancelWaiters.delete(sessionId);
    report({ event: "cancelled", via: how });
    await send(client, sessionId, { sessionUpdate: "tool_call_update", toolCallId: "long-1", status: "failed" });
    return { stopReason: how === "timeout" ? "end_turn" : "cancelled" };
  }

  async function holdTurn(client, sessionId, signal) {
    await send(client, sessionId, { sessionUpdate: "agent_message_chunk", content: { type: "text", text: script.holdingMessage } });
    await new Promise((resolve) => {
      signal.addEventListener("abort", resolve, { once: true });
      setTimeout(resolve, script.cancelWaitMs);
    });
    if (signal.aborted) {
      report({ event: "request_cancelled" });
      throw acp.RequestError.requestCancelled();
    }
    report({ event: "hold_timeout" });
    return { stopReason: "end_turn" };
  }

  return acp
    .agent({ name: "ts-interop-agent" })
    .onRequest(acp.methods.agent.initialize, ({ params }) => {
      clientCaps = params.clientCapabilities ?? {};
      report({ event: "initialize", protocolVersion: params.protocolVersion, clientCapabilities: clientCaps });
      return {
        protocolVersion: acp.PROTOCOL_VERSION,
        agentCapabilities: { loadSession: true, promptCapabilities: { image: true, embeddedContext: true } },
        agentInfo: { name: "ts-interop-agent", version: "2.4.0" },
      };
    })
    .onRequest(acp.methods.agent.session.new, ({ params }) => {
      const sessionId = `ts-session-${++sessions}`;
      sessionCwd.set(sessionId, params.cwd);
      return { sessionId, modes: script.modes };
    })
    .onRequest(acp.methods.agent.session.load, async ({ params, client }) => {
      sessionCwd.set(params.sessionId, params.cwd);
      for (const update of script.history) await send(client, params.sessionId, update);
      report({ event: "loaded", sessionId: params.sessionId });
      return {};
    })
    .onRequest(acp.methods.agent.session.prompt, async ({ params, client, signal }) => {
      const blocks = params.prompt.map((b) => b.type);
      const words = params.prompt.filter((b) => b.type === "text").map((b) => b.text).join(" ");
      report({ event: "prompt", blocks, text: words });
      if (words.includes(script.prompts.cancel)) return cancelTurn(client, params.sessionId);
      if (words.includes(script.prompts.hold)) return holdTurn(client, params.sessionId, signal);
      return work(client, params.sessionId);
    })
    .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
      report({ event: "session_cancel", sessionId: params.sessionId });
      cancelWaiters.get(params.sessionId)?.();
    });
}

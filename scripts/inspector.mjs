// A client of workerd's inspector (the Chrome DevTools protocol over a WebSocket), for the profiler
// (bench/lib/inspector.mjs) and the kill test's breakpoints (scripts/crash.mjs). Node 20 has no
// WebSocket of its own.
import WebSocket from "ws";

/**
 * The inspector of the vault's isolate, or of the worker named `worker` beside it (a benchmark's
 * floor): `inspectorUrl` is startLocalVault's. Answers
 * {call(method, params), on(event, listener), close(), target}.
 */
export async function inspectVault(inspectorUrl, worker = "vault") {
  const targets = await (await fetch(`http://${new URL(inspectorUrl).host}/json/list`)).json();
  const target = targets.find((each) => each.title?.includes(worker) || each.url?.includes(worker)) ?? targets[0];
  return { ...(await connect(target.webSocketDebuggerUrl)), target: target.title ?? target.url, targets: targets.length };
}

function connect(url) {
  return new Promise((resolvePromise, reject) => {
    const socket = new WebSocket(url);
    const pending = new Map();
    const listeners = new Map();
    let id = 0;
    socket.on("message", (data) => {
      const message = JSON.parse(data.toString());
      if (message.id === undefined) {
        for (const listener of listeners.get(message.method) ?? []) listener(message.params);
        return;
      }
      const waiter = pending.get(message.id);
      if (!waiter) return;
      pending.delete(message.id);
      if (message.error) waiter.reject(new Error(message.error.message));
      else waiter.resolve(message.result);
    });
    socket.on("error", reject);
    socket.on("open", () =>
      resolvePromise({
        call: (method, params = {}) =>
          new Promise((resolveCall, rejectCall) => {
            pending.set(++id, { resolve: resolveCall, reject: rejectCall });
            socket.send(JSON.stringify({ id, method, params }));
          }),
        on: (event, listener) => listeners.set(event, [...(listeners.get(event) ?? []), listener]),
        close: () => socket.close(),
      }),
    );
  });
}

#!/usr/bin/env node
// The vault in a process of its own, on D1 kept in a directory: what scripts/crash.mjs starts, kills
// with SIGKILL (this process and its workerd, one process group) and starts again on the same
// directory. Started with child_process.fork, its options in the environment variable VAULT_PROCESS
// (JSON: startLocalVault's buildDir, persistTo, migrate, masterKey, operatorKey, dataDatabases, declared,
// bindings); workerd's inspector is open on a free port. Over the IPC channel it sends {ready: baseUrl,
// inspector: its URL} once it serves, {log: {level, message}}
// for each of the runtime's warnings and errors, and answers requests {id, ...}:
//   {id, query: {binding, sql, params}}   the rows of one SQL statement (a read) on that database
//   {id, cron: true}                      runs the cron's handler (`scheduled`) once, to its end
import { startLocalVault } from "./local-vault.mjs";

const options = JSON.parse(process.env.VAULT_PROCESS ?? "{}");
const vault = await startLocalVault({
  ...options,
  inspectorPort: 0,
  onLog: ({ level, message }) => {
    if (level === "warn" || level === "error") process.send({ log: { level, message } });
  },
});
const worker = await vault.mf.getWorker("vault");

/** What one request from the parent asks of the vault. */
async function answer(request) {
  if (request.query) {
    const { binding, sql, params = [] } = request.query;
    const database = await vault.mf.getD1Database(binding, "vault");
    const read = async () =>
      (
        await database
          .prepare(sql)
          .bind(...params)
          .all()
      ).results;
    // Miniflare reaches workerd over kept-alive connections, one of which workerd may close as it is reused
    // ("fetch failed"): a statement that never arrived is sent once more.
    return read().catch((error) => {
      if (error?.message !== "fetch failed") throw error;
      return read();
    });
  }
  if (request.cron) {
    const result = await worker.scheduled({ cron: "*/15 * * * *", scheduledTime: new Date() });
    return result.outcome;
  }
  throw new Error(`unknown request ${JSON.stringify(request)}`);
}

process.on("message", (request) => {
  answer(request).then(
    (result) => process.send({ id: request.id, result }),
    (error) => process.send({ id: request.id, error: error instanceof Error ? error.message : String(error) }),
  );
});
// The parent went away without killing this process (it stopped on an error): stop too.
process.on("disconnect", () => vault.dispose().finally(() => process.exit(0)));
process.send({ ready: vault.baseUrl, inspector: vault.inspectorUrl });

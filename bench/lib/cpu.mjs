// The CPU time workerd spends on calls, and how far its memory rises (not a benchmark: bench/run.mjs
// runs only bench/*.mjs). On a machine whose cores other work shares, latency moves with that work;
// the CPU time the workerd process itself is charged moves far less, so it resolves differences of a
// few percent. Linux only (it reads /proc): elsewhere the pid is null and no CPU figure is taken.
import { readdirSync, readFileSync, readlinkSync, writeFileSync } from "node:fs";

/**
 * The workerd process that listens on `url`'s port: a worker's own socket (startLocalVault's
 * unsafeDirectSockets) belongs to the workerd of its Miniflare. Several vaults may run at once,
 * each in its own workerd, so the socket, not the parentage, tells them apart. Null when not found.
 */
export function workerdServing(url) {
  const port = Number(new URL(url).port);
  const inodes = listeningInodes(port);
  if (inodes.size === 0) return null;
  for (const pid of readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
    try {
      if (!readFileSync(`/proc/${pid}/comm`, "utf8").startsWith("workerd")) continue;
      for (const fd of readdirSync(`/proc/${pid}/fd`)) {
        const socket = /^socket:\[(\d+)\]$/.exec(readLinkOf(`/proc/${pid}/fd/${fd}`));
        if (socket && inodes.has(socket[1])) return pid;
      }
    } catch {}
  }
  return null;
}

/** The inodes of the sockets listening on `port` (IPv4 and IPv6). */
function listeningInodes(port) {
  const inodes = new Set();
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let lines;
    try {
      lines = readFileSync(table, "utf8").trim().split("\n").slice(1);
    } catch {
      continue;
    }
    for (const line of lines) {
      const fields = line.trim().split(/\s+/);
      const localPort = Number.parseInt(fields[1].split(":")[1], 16);
      const LISTEN = "0A";
      if (localPort === port && fields[3] === LISTEN) inodes.add(fields[9]);
    }
  }
  return inodes;
}

function readLinkOf(path) {
  try {
    return readlinkSync(path);
  } catch {
    return "";
  }
}

/**
 * The CPU time the process has used so far, every thread's, in microseconds: from each thread's
 * schedstat (nanoseconds) where the kernel keeps it, else from stat's clock ticks (10 ms each).
 */
export function cpuMicros(pid) {
  try {
    let nanoseconds = 0;
    for (const thread of readdirSync(`/proc/${pid}/task`)) {
      nanoseconds += Number(readFileSync(`/proc/${pid}/task/${thread}/schedstat`, "utf8").split(" ")[0]);
    }
    return nanoseconds / 1000;
  } catch {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const TICKS_PER_SECOND = 100;
    return ((Number(fields[11]) + Number(fields[12])) * 1e6) / TICKS_PER_SECOND;
  }
}

/** How often settledCpu looks, and what counts as idle: less than this share of a core in a look. */
const LOOK_MS = 50;
const IDLE_SHARE = 0.01;
/**
 * How long workerd must stay idle for the work a burst of calls left behind to have run: the audit
 * send waits 10 ms, and a queue consumer up to max_batch_timeout (1 s in wrangler.toml) for a batch.
 */
const QUIET_MS = 1200;
/** A burst whose aftermath runs longer than this is read as it stands. */
const MOST_MS = 20_000;

/**
 * The process's CPU time once the work still running has run: read when it last did anything, after
 * QUIET_MS of idleness, so the idle wait adds nothing to it.
 */
export async function settledCpu(pid) {
  const started = performance.now();
  let last = cpuMicros(pid);
  let lastBusy = last;
  let idleSince = performance.now();
  while (performance.now() - idleSince < QUIET_MS && performance.now() - started < MOST_MS) {
    await new Promise((resolve) => setTimeout(resolve, LOOK_MS));
    const now = cpuMicros(pid);
    if (now - last > IDLE_SHARE * LOOK_MS * 1000) {
      lastBusy = now;
      idleSince = performance.now();
    }
    last = now;
  }
  return lastBusy;
}

/** A line of /proc/<pid>/status in bytes ("VmRSS:   1234 kB"). */
function statusBytes(pid, field) {
  const line = readFileSync(`/proc/${pid}/status`, "utf8")
    .split("\n")
    .find((text) => text.startsWith(`${field}:`));
  return Number(/(\d+)\s*kB/.exec(line ?? "")?.[1] ?? Number.NaN) * 1024;
}

/**
 * How far the process's resident memory rose above where it stood while `fn` ran, in bytes: the
 * kernel's peak (VmHWM) is reset to the current size first (writing 5 to clear_refs), then read
 * after. Answers null where the kernel does not allow the reset (off Linux, or another user's process).
 */
export async function peakRise(pid, fn) {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, "5");
  } catch {
    await fn();
    return null;
  }
  const before = statusBytes(pid, "VmRSS");
  await fn();
  return statusBytes(pid, "VmHWM") - before;
}

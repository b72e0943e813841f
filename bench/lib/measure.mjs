// Measuring helpers the benchmarks share (not a benchmark: bench/run.mjs runs only bench/*.mjs).
import { createServer } from "node:http";
import { readReply } from "../../test/support/reply.mjs";
import { cpuMicros, settledCpu } from "./cpu.mjs";
import { mean, median } from "./statistics.mjs";

/**
 * The calls measured turn about, so that whatever else loads the machine weighs on all alike: the
 * ratios stay meaningful even when the absolute figures move.
 */
export async function interleavedLatency(bench, fns, iterations) {
  const rounds = bench.rounds(10);
  const samples = fns.map(() => []);
  for (let round = 0; round < rounds; round++) {
    for (const [index, fn] of fns.entries()) {
      const figures = await bench.latency(fn, { iterations: Math.ceil(iterations / rounds), warmup: round === 0 ? 50 : 5 });
      samples[index].push(figures);
    }
  }
  return samples.map((figures) => ({ p50: median(figures.map((f) => f.p50)), p95: median(figures.map((f) => f.p95)) }));
}

export async function interleavedThroughput(bench, fns, durationMs) {
  const rounds = bench.rounds(4);
  const rates = fns.map(() => []);
  for (let round = 0; round < rounds; round++) {
    for (const [index, fn] of fns.entries()) {
      rates[index].push((await bench.throughput(fn, { concurrency: 32, durationMs: durationMs / rounds })).rps);
    }
  }
  return rates.map((list) => ({ rps: mean(list) }));
}

export async function send(url, body, headers) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return readReply(response);
}

/** A loopback destination that answers every request with the body it received, as JSON. */
export async function startEcho() {
  const server = createServer((request, response) => {
    const chunks = [];
    request.on("data", (chunk) => chunks.push(chunk));
    request.on("end", () => {
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify({ received: Buffer.concat(chunks).toString("utf8") }));
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** `count` calls of `fn`, `concurrency` at a time. */
export async function callsAtOnce(fn, count, concurrency) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      while (next < count) await fn(next++);
    }),
  );
}

/**
 * The CPU time workerd spends a call of each function, in microseconds, what the call leaves behind
 * (the audit log's queue consumer) included: `requests` calls of each, 32 at a time, turn about in
 * rounds, each burst read once its workerd has settled (bench/lib/cpu.mjs). `pids[i]` is the workerd
 * that fns[i] calls (by default the run's own); a null one gives a null figure. A smoke run reads
 * without settling.
 */
export async function interleavedCpu(bench, fns, requests, pids = fns.map(() => bench.workerd)) {
  const rounds = bench.rounds(2);
  const perBurst = Math.max(1, Math.ceil(requests / rounds));
  const read = (pid) => (bench.smoke ? cpuMicros(pid) : settledCpu(pid));
  // Settled once here, each workerd is settled again after every burst of its own.
  for (const pid of new Set(pids.filter(Boolean))) await read(pid);
  const spent = fns.map(() => 0);
  for (let round = 0; round < rounds; round++) {
    for (const [index, fn] of fns.entries()) {
      const pid = pids[index];
      if (!pid) continue;
      const before = cpuMicros(pid);
      await callsAtOnce(fn, perBurst, 32);
      spent[index] += (await read(pid)) - before;
    }
  }
  return spent.map((micros, index) => (pids[index] ? micros / (rounds * perBurst) : null));
}

// Measuring helpers the benchmarks share (not a benchmark: bench/run.mjs runs only bench/*.mjs).
import { createServer } from "node:http";
import { readReply } from "../../test/support/reply.mjs";
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

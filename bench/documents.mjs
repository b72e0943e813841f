// Documents: a document of the size limit uploaded (POST /documents, multipart, sealed chunk by chunk
// into an R2 multipart upload) and downloaded (GET /documents/{id}/data, opened as it streams), in
// MB/s next to a bare worker's R2 put and get of the same bytes in the same workerd. Then how far
// workerd's resident memory rises during each (its kernel-kept peak), next to the same bare put and
// get: a document that sat whole in the vault's memory would rise by its size more than the floor.
//   npm run bench documents [--size=26214400] [--rounds=3]
import { randomBytes } from "node:crypto";
import { request } from "node:http";
import { peakRise } from "./lib/cpu.mjs";

const MB = 1_000_000;

export default async function documents(bench) {
  const { size, rounds } = bench.sizes({ size: [25 * 1024 * 1024, 64 * 1024], rounds: [3, 1] });
  const tenant = await bench.seedTenant();
  const { key } = await bench.createApplication(tenant, {
    type: "private",
    permissions: ["documents:create", "documents:read", "documents:reveal", "documents:delete"],
  });
  const bytes = randomBytes(size);
  const form = new FormData();
  form.append("document", new Blob([bytes], { type: "application/pdf" }), "document.pdf");
  const encoded = new Response(form);
  const formType = encoded.headers.get("content-type");
  const formBytes = Buffer.from(await encoded.arrayBuffer());
  const upload = async () => {
    const reply = await send("POST", bench.url("/documents"), { "SVC-API-KEY": key, "content-type": formType }, formBytes);
    return JSON.parse(reply.toString()).id;
  };
  const download = async (id) => {
    const back = await send("GET", bench.url(`/documents/${id}/data`), { "SVC-API-KEY": key });
    if (!back.equals(bytes)) throw new Error("the document came back different");
  };
  const floorKey = `floor-${randomBytes(4).toString("hex")}`;
  const floorPut = () => send("PUT", bench.r2Url(floorKey), {}, bytes);
  const floorGet = async () => {
    const back = await send("GET", bench.r2Url(floorKey), {});
    if (!back.equals(bytes)) throw new Error("the floor's object came back different");
  };

  bench.section(`a document of ${size} bytes, ${rounds} rounds, turn about with the floor`);
  const timings = { upload: [], download: [], put: [], get: [] };
  const timed = async (list, fn) => {
    const start = performance.now();
    const result = await fn();
    list.push(performance.now() - start);
    return result;
  };
  let id;
  for (let round = 0; round < rounds; round++) {
    id = await timed(timings.upload, upload);
    await timed(timings.put, floorPut);
    await timed(timings.download, () => download(id));
    await timed(timings.get, floorGet);
  }
  const rate = (list) => size / MB / (Math.min(...list) / 1000);
  bench.report("upload (POST /documents), best round", rate(timings.upload), "bare R2 put of the same bytes", rate(timings.put), "MB/s");
  bench.report("download (GET …/data), best round", rate(timings.download), "bare R2 get of the same bytes", rate(timings.get), "MB/s");

  if (!bench.workerd) return bench.skip("peak memory", "workerd's process is not readable here (Linux /proc only)");
  bench.section(`workerd's peak resident memory above its level before, a document of ${size} bytes (${(size / MB).toFixed(1)} MB)`);
  const rise = async (fn) => {
    const risen = await peakRise(bench.workerd, fn);
    return risen === null ? null : risen / MB;
  };
  const peaks = { upload: [], download: [], put: [], get: [] };
  for (let round = 0; round < rounds; round++) {
    let uploaded;
    peaks.upload.push(await rise(async () => (uploaded = await upload())));
    peaks.put.push(await rise(floorPut));
    peaks.download.push(await rise(() => download(uploaded)));
    peaks.get.push(await rise(floorGet));
  }
  if (peaks.upload.includes(null)) return bench.skip("peak memory", "the kernel refused to reset workerd's peak (clear_refs)");
  const most = (list) => Math.max(...list);
  bench.report("upload's rise, highest round", most(peaks.upload), "bare R2 put's rise", most(peaks.put), "MB");
  bench.report("download's rise, highest round", most(peaks.download), "bare R2 get's rise", most(peaks.get), "MB");
}

/**
 * One request on a connection of its own, answering the reply's body (a reply outside 2xx throws).
 * Not fetch's kept-alive connections: workerd was seen closing the connection a 25 MB upload came on
 * after answering it, and the next request sent on it failed before any reply. The vault and the
 * floor are both called this way.
 */
function send(method, url, headers, body) {
  return new Promise((resolve, reject) => {
    const sent = request(
      url,
      { method, agent: false, headers: body ? { ...headers, "content-length": body.length } : headers },
      (reply) => {
        const parts = [];
        reply.on("data", (part) => parts.push(part));
        reply.on("error", reject);
        reply.on("end", () => {
          const answered = Buffer.concat(parts);
          if (reply.statusCode < 200 || reply.statusCode > 299)
            reject(new Error(`${method} ${url} answered ${reply.statusCode}: ${answered.toString().slice(0, 300)}`));
          else resolve(answered);
        });
      },
    );
    sent.on("error", reject);
    sent.end(body);
  });
}

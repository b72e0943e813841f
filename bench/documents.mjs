// Documents: a document of the size limit uploaded (POST /documents, multipart, sealed chunk by chunk
// into an R2 multipart upload) and downloaded (GET /documents/{id}/data, opened as it streams), in
// MB/s next to a bare worker's R2 put and get of the same bytes in the same workerd.
//   npm run bench documents [--size=26214400] [--rounds=3]
import { randomBytes } from "node:crypto";

const MB = 1_000_000;

export default async function documents(bench) {
  const { size, rounds } = bench.sizes({ size: [25 * 1024 * 1024, 64 * 1024], rounds: [3, 1] });
  const tenant = await bench.seedTenant();
  const { key } = await bench.createApplication(tenant, {
    type: "private",
    permissions: ["documents:create", "documents:read", "documents:reveal", "documents:delete"],
  });
  const bytes = randomBytes(size);
  const upload = async () => {
    const form = new FormData();
    form.append("document", new Blob([bytes], { type: "application/pdf" }), "document.pdf");
    const reply = await fetch(bench.url("/documents"), { method: "POST", headers: { "SVC-API-KEY": key }, body: form });
    return (await reply.json()).id;
  };
  const download = async (id) => {
    const reply = await fetch(bench.url(`/documents/${id}/data`), { headers: { "SVC-API-KEY": key } });
    const back = Buffer.from(await reply.arrayBuffer());
    if (!back.equals(bytes)) throw new Error("the document came back different");
  };
  const floorKey = `floor-${randomBytes(4).toString("hex")}`;
  const floorPut = () => fetch(bench.r2Url(floorKey), { method: "PUT", body: bytes });
  const floorGet = async () => {
    const back = Buffer.from(await (await fetch(bench.r2Url(floorKey))).arrayBuffer());
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
}

import { useState } from "preact/hooks";
import { call, headerPrefix, type Reply } from "./api";

/** What a try answered: status, trace id, how long it took in the browser, and the body. */
export function TryResult({ result }: { result: { reply: Reply; milliseconds: number } | null }) {
  if (!result) return null;
  const { reply, milliseconds } = result;
  return (
    <div class={`try-result ${reply.ok ? "good" : "bad"}`} role="status" data-try-result>
      <p>
        Status <strong data-status>{reply.status}</strong> · trace id <code data-trace-id>{reply.traceId ?? "—"}</code> ·{" "}
        {milliseconds.toFixed(0)} ms
      </p>
      <pre>{typeof reply.body === "string" ? reply.body : JSON.stringify(reply.body, null, 2)}</pre>
    </div>
  );
}

/** Runs a call and times it. */
export async function timed(run: () => Promise<Reply>): Promise<{ reply: Reply; milliseconds: number }> {
  const started = performance.now();
  const reply = await run();
  return { reply, milliseconds: performance.now() - started };
}

/** Sends a sample request through a proxy (/proxy with its key), as a partner's caller would. */
export function ProxyTry({ proxyKey }: { proxyKey: string }) {
  const [method, setMethod] = useState("POST");
  const [path, setPath] = useState("/");
  const [body, setBody] = useState('{"amount": 100}');
  const [result, setResult] = useState<{ reply: Reply; milliseconds: number } | null>(null);
  const [busy, setBusy] = useState(false);
  return (
    <form
      class="panel try"
      aria-label="Try the proxy"
      onSubmit={async (event) => {
        event.preventDefault();
        setBusy(true);
        const suffix = path.startsWith("/") ? path : `/${path}`;
        setResult(
          await timed(() =>
            call(method, `/proxy${suffix === "/" ? "" : suffix}`, method === "GET" ? undefined : body, {
              headers: { [`${headerPrefix()}-PROXY-KEY`]: proxyKey },
            }),
          ),
        );
        setBusy(false);
      }}
    >
      <h3>Try it</h3>
      <label>
        Method{" "}
        <select value={method} onChange={(event) => setMethod(event.currentTarget.value)}>
          {["GET", "POST", "PUT", "PATCH", "DELETE"].map((option) => (
            <option key={option}>{option}</option>
          ))}
        </select>
      </label>{" "}
      <label>
        Path after the destination <input value={path} onInput={(event) => setPath(event.currentTarget.value)} />
      </label>
      <label class="block">
        Body (JSON; a token's id written as {"{{ id }}"} is replaced by its data)
        <textarea value={body} onInput={(event) => setBody(event.currentTarget.value)} />
      </label>
      <button type="submit" disabled={busy}>
        Send the sample request
      </button>
      <TryResult result={result} />
    </form>
  );
}

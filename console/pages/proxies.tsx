import { useState } from "preact/hooks";
import { call, type Reply } from "../api";
import { CodeEditor } from "../code-editor";
import { ConfirmButton, Field, ListState, Problem, useLoad, When } from "../components";
import { may, type Session } from "../session";
import { ProxyTry } from "../try-panel";

interface Proxy {
  id: string;
  name: string;
  key: string;
  destination_url: string;
  request_transform: { code: string } | null;
  response_transform: { code: string } | null;
  require_auth: boolean;
  application_id: string | null;
  created_at: string;
  modified_at: string | null;
}

const SAMPLE_REQUEST_TRANSFORM = `module.exports = async function (req) {
  const { headers, body } = req.args;
  return { headers, body };
};
`;

export function ProxiesPage({ session }: { session: Session }) {
  const [proxies, reload] = useLoad<{ data: Proxy[] }>("/proxies?size=100");
  const [editing, setEditing] = useState<Proxy | "new" | null>(null);
  const list = proxies.state === "ready" ? { state: "ready" as const, data: proxies.data.data } : proxies;
  return (
    <>
      {may(session, "proxy:create") && editing === null && (
        <button type="button" onClick={() => setEditing("new")}>
          Create a proxy
        </button>
      )}
      {editing !== null && (
        <ProxyForm
          proxy={editing === "new" ? null : editing}
          onDone={() => {
            setEditing(null);
            reload();
          }}
        />
      )}
      <h2>Proxies</h2>
      <ListState loaded={list} what="proxies" empty="No proxies yet.">
        {(items) => (
          <ul class="cards">
            {items.map((proxy) => (
              <li key={proxy.id} data-proxy={proxy.name}>
                <article aria-label={proxy.name}>
                  <h3>{proxy.name}</h3>
                  <p>
                    <code data-proxy-id>{proxy.id}</code> → <code>{proxy.destination_url}</code> ·{" "}
                    {proxy.require_auth ? "needs an API key with token:use" : "no API key needed"} · request transform{" "}
                    {proxy.request_transform ? "yes" : "no"} · response transform {proxy.response_transform ? "yes" : "no"} · created{" "}
                    <When iso={proxy.created_at} />
                  </p>
                  <div class="actions">
                    {may(session, "proxy:update") && (
                      <button type="button" onClick={() => setEditing(proxy)}>
                        Edit {proxy.name}
                      </button>
                    )}
                    {may(session, "proxy:delete") && (
                      <ConfirmButton
                        label={`Delete ${proxy.name}`}
                        destroys={`The proxy ${proxy.name}, its key and its transforms are deleted: calls with its key answer 401 from now on.`}
                        confirm="Delete the proxy"
                        onConfirm={async () => {
                          if ((await call("DELETE", `/proxies/${proxy.id}`)).ok) reload();
                        }}
                      />
                    )}
                  </div>
                  <ProxyTry proxyKey={proxy.key} />
                </article>
              </li>
            ))}
          </ul>
        )}
      </ListState>
    </>
  );
}

function ProxyForm({ proxy, onDone }: { proxy: Proxy | null; onDone: () => void }) {
  const [name, setName] = useState(proxy?.name ?? "");
  const [destination, setDestination] = useState(proxy?.destination_url ?? "");
  const [requireAuth, setRequireAuth] = useState(proxy?.require_auth ?? true);
  // A new proxy has no transform: each one costs a call into an isolate on every proxied request.
  const [requestCode, setRequestCode] = useState(proxy?.request_transform?.code ?? "");
  // The editor takes its text when it mounts: a new key mounts it again with the sample.
  const [requestEditor, setRequestEditor] = useState(0);
  const [responseCode, setResponseCode] = useState(proxy?.response_transform?.code ?? "");
  const [application, setApplication] = useState(proxy?.application_id ?? "");
  const [applications] = useLoad<{ data: { id: string; name: string; type: string }[] }>("/applications?size=100");
  const [failure, setFailure] = useState<Reply | null>(null);
  return (
    <form
      class="panel"
      aria-label={proxy ? `Edit ${proxy.name}` : "Create a proxy"}
      onSubmit={async (event) => {
        event.preventDefault();
        const body = {
          name,
          destination_url: destination,
          require_auth: requireAuth,
          application: application ? { id: application } : null,
          request_transform: requestCode.trim() ? { code: requestCode } : null,
          response_transform: responseCode.trim() ? { code: responseCode } : null,
        };
        const reply = await call(proxy ? "PUT" : "POST", proxy ? `/proxies/${proxy.id}` : "/proxies", body);
        setFailure(reply);
        if (reply.ok) onDone();
      }}
    >
      <h2>{proxy ? `Edit ${proxy.name}` : "Create a proxy"}</h2>
      <Field label="Name">{(id) => <input id={id} required value={name} onInput={(event) => setName(event.currentTarget.value)} />}</Field>
      <Field label="Destination URL" hint="Where the vault forwards the request, after detokenizing it.">
        {(id, hint) => (
          <input
            id={id}
            type="url"
            required
            aria-describedby={hint}
            value={destination}
            onInput={(event) => setDestination(event.currentTarget.value)}
          />
        )}
      </Field>
      <label class="check">
        <input type="checkbox" checked={requireAuth} onChange={(event) => setRequireAuth(event.currentTarget.checked)} /> Callers need an
        API key with token:use
      </label>
      <Field
        label="Application"
        hint="Whose access rules detokenize the request for callers without an API key, and whose tokens the transforms create."
      >
        {(id, hint) => (
          <select id={id} aria-describedby={hint} value={application} onChange={(event) => setApplication(event.currentTarget.value)}>
            <option value="">None</option>
            {applications.state === "ready" &&
              applications.data.data
                .filter((candidate) => candidate.type === "private" || candidate.type === "public")
                .map((candidate) => (
                  <option key={candidate.id} value={candidate.id}>
                    {candidate.name} ({candidate.type})
                  </option>
                ))}
          </select>
        )}
      </Field>
      <p class="hint">
        Request transform (empty: none; each transform runs on every call){" "}
        <button
          type="button"
          onClick={() => {
            setRequestCode(SAMPLE_REQUEST_TRANSFORM);
            setRequestEditor((count) => count + 1);
          }}
        >
          Start from a sample
        </button>
      </p>
      <CodeEditor key={requestEditor} label="Request transform" value={requestCode} onChange={setRequestCode} />
      <p class="hint">Response transform (empty: none)</p>
      <CodeEditor label="Response transform" value={responseCode} onChange={setResponseCode} />
      <Problem reply={failure} />
      <div class="actions">
        <button type="submit">{proxy ? "Save the proxy" : "Create the proxy"}</button>
        <button type="button" onClick={onDone}>
          Cancel
        </button>
      </div>
    </form>
  );
}

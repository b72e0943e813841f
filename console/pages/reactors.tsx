import { useState } from "preact/hooks";
import { call, type Reply } from "../api";
import { CodeEditor } from "../code-editor";
import { ConfirmButton, Field, ListState, Problem, useLoad, When } from "../components";
import { may, type Session } from "../session";
import { TryResult, timed } from "../try-panel";

interface Reactor {
  id: string;
  name: string;
  code: string | null;
  formula: { id: string; name: string } | null;
  created_at: string;
}

const SAMPLE_CODE = `module.exports = async function (req) {
  return { raw: { received: req.args } };
};
`;

export function ReactorsPage({ session }: { session: Session }) {
  const [reactors, reload] = useLoad<{ data: Reactor[] }>("/reactors?size=100");
  const [editing, setEditing] = useState<Reactor | "new" | null>(null);
  const list = reactors.state === "ready" ? { state: "ready" as const, data: reactors.data.data } : reactors;
  return (
    <>
      {may(session, "reactor:create") && editing === null && (
        <button type="button" onClick={() => setEditing("new")}>
          Create a reactor
        </button>
      )}
      {editing !== null && (
        <ReactorForm
          reactor={editing === "new" ? null : editing}
          onDone={() => {
            setEditing(null);
            reload();
          }}
        />
      )}
      <h2>Reactors</h2>
      <ListState loaded={list} what="reactors" empty="No reactors yet.">
        {(items) => (
          <ul class="cards">
            {items.map((reactor) => (
              <li key={reactor.id} data-reactor={reactor.name}>
                <article aria-label={reactor.name}>
                  <h3>{reactor.name}</h3>
                  <p>
                    {reactor.formula ? `Formula ${reactor.formula.name}` : "Its own code"} · created <When iso={reactor.created_at} />
                  </p>
                  <div class="actions">
                    {may(session, "reactor:update") && reactor.code !== null && (
                      <button type="button" onClick={() => setEditing(reactor)}>
                        Edit {reactor.name}
                      </button>
                    )}
                    {may(session, "reactor:delete") && (
                      <ConfirmButton
                        label={`Delete ${reactor.name}`}
                        destroys={`The reactor ${reactor.name} and its code and configuration are deleted: react calls to it answer 404 from now on.`}
                        confirm="Delete the reactor"
                        onConfirm={async () => {
                          if ((await call("DELETE", `/reactors/${reactor.id}`)).ok) reload();
                        }}
                      />
                    )}
                  </div>
                  <ReactTry reactor={reactor} />
                </article>
              </li>
            ))}
          </ul>
        )}
      </ListState>
    </>
  );
}

/** Calls react with sample args (needs token:use: a management key is answered 403, which is shown). */
function ReactTry({ reactor }: { reactor: Reactor }) {
  const [args, setArgs] = useState("{}");
  const [result, setResult] = useState<{ reply: Reply; milliseconds: number } | null>(null);
  return (
    <form
      class="panel try"
      aria-label={`Try ${reactor.name}`}
      onSubmit={async (event) => {
        event.preventDefault();
        setResult(await timed(() => call("POST", `/reactors/${reactor.id}/react`, `{"args": ${args}}`)));
      }}
    >
      <label class="block">
        Args (JSON)
        <textarea value={args} onInput={(event) => setArgs(event.currentTarget.value)} />
      </label>
      <button type="submit">React</button>
      <TryResult result={result} />
    </form>
  );
}

function ReactorForm({ reactor, onDone }: { reactor: Reactor | null; onDone: () => void }) {
  const [name, setName] = useState(reactor?.name ?? "");
  const [code, setCode] = useState(reactor?.code ?? SAMPLE_CODE);
  const [failure, setFailure] = useState<Reply | null>(null);
  return (
    <form
      class="panel"
      aria-label={reactor ? `Edit ${reactor.name}` : "Create a reactor"}
      onSubmit={async (event) => {
        event.preventDefault();
        const reply = await call(reactor ? "PUT" : "POST", reactor ? `/reactors/${reactor.id}` : "/reactors", { name, code });
        setFailure(reply);
        if (reply.ok) onDone();
      }}
    >
      <h2>{reactor ? `Edit ${reactor.name}` : "Create a reactor"}</h2>
      <Field label="Name">{(id) => <input id={id} required value={name} onInput={(event) => setName(event.currentTarget.value)} />}</Field>
      <p class="hint">Code: Node 16 style CommonJS exporting an async function of {"{args, configuration, bt}"}</p>
      <CodeEditor label="Reactor code" value={code} onChange={setCode} />
      <Problem reply={failure} />
      <div class="actions">
        <button type="submit">{reactor ? "Save the reactor" : "Create the reactor"}</button>
        <button type="button" onClick={onDone}>
          Cancel
        </button>
      </div>
    </form>
  );
}

import { useState } from "preact/hooks";
import { call, problemText, type Reply } from "../api";
import { Field, Problem, When } from "../components";
import { may, type Session } from "../session";

interface Token {
  id: string;
  type: string;
  containers?: string[];
  data?: unknown;
  mask?: unknown;
  metadata?: Record<string, string>;
  fingerprint?: string | null;
  created_at: string;
  expires_at?: string | null;
}

interface Page {
  pagination: { page_size: number; next?: string | null };
  data: Token[];
}

/** "query: column 7: reason" as the vault answers a query it cannot read: the column, 1-based. */
function columnOf(reply: Reply): number | null {
  const message: string | undefined = reply.body?.errors?.query?.[0];
  const match = message ? /^column (\d+):/.exec(message) : null;
  return match ? Number(match[1]) : null;
}

/**
 * Search by POST /v2/tokens/search, paged by cursor. Tokens are shown as the vault answers them for
 * the signed-in key (masked, redacted or revealed by its rules); a key without token:search (a
 * management key) shows no token data at all.
 */
export function TokensPage({ session }: { session: Session }) {
  return (
    <>
      {may(session, "token:create") && <CreateToken />}
      {may(session, "token:search") ? (
        <SearchTokens />
      ) : (
        <p class="state empty" data-no-token-access>
          This key holds no <code>token:search</code> permission ({session.application.type} application): the console shows no token data
          under it. The Overview counts tokens by type and container; sign in with a private key to search tokens.
        </p>
      )}
    </>
  );
}

/** The token types a token may be created with (the vault's TOKEN_TYPES); `card` and `bank` take JSON data. */
const TYPES = [
  "token",
  "card_number",
  "card",
  "bank",
  "social_security_number",
  "employer_id_number",
  "us_bank_account_number",
  "us_bank_routing_number",
];

function CreateToken() {
  const [type, setType] = useState("card_number");
  const [data, setData] = useState("");
  const [reply, setReply] = useState<Reply<Token> | null>(null);
  return (
    <form
      class="panel"
      aria-label="Create a token"
      onSubmit={async (event) => {
        event.preventDefault();
        let value: unknown = data;
        if (type === "card" || type === "bank") {
          try {
            value = JSON.parse(data);
          } catch {}
        }
        setReply(await call<Token>("POST", "/tokens", { type, data: value }));
        setData("");
      }}
    >
      <h2>Create a token</h2>
      <Field label="Token type">
        {(id) => (
          <select id={id} value={type} onChange={(event) => setType(event.currentTarget.value)}>
            {TYPES.map((option) => (
              <option key={option}>{option}</option>
            ))}
          </select>
        )}
      </Field>
      <Field
        label="Data"
        hint={'Card and bank tokens take JSON, such as {"number": "4242424242424242", "expiration_month": 12, "expiration_year": 2030}.'}
      >
        {(id, hint) => (
          <input
            id={id}
            type="password"
            autocomplete="off"
            required
            aria-describedby={hint}
            value={data}
            onInput={(event) => setData(event.currentTarget.value)}
          />
        )}
      </Field>
      <button type="submit">Create the token</button>
      <Problem reply={reply} />
      {reply?.ok && (
        <p role="status">
          Created token <code data-created-token>{reply.body.id}</code> ({reply.body.type}); use it in a proxy's request as{" "}
          <code>{`{{ ${reply.body.id} }}`}</code>.
        </p>
      )}
    </form>
  );
}

function SearchTokens() {
  const [text, setText] = useState("");
  const [result, setResult] = useState<{ tokens: Token[]; next: string | null } | null>(null);
  const [failure, setFailure] = useState<Reply | null>(null);
  const [busy, setBusy] = useState(false);
  const search = async (start: string | null) => {
    setBusy(true);
    const reply = await call<Page>("POST", "/v2/tokens/search", { query: text, size: 20, ...(start ? { start } : {}) });
    setBusy(false);
    if (!reply.ok) {
      setFailure(reply);
      return;
    }
    setFailure(null);
    setResult({
      tokens: start && result ? [...result.tokens, ...reply.body.data] : reply.body.data,
      next: reply.body.pagination.next ?? null,
    });
  };
  const column = failure ? columnOf(failure) : null;
  return (
    <>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          search(null);
        }}
      >
        <Field
          label="Query"
          hint={
            <>
              For example <code>type:card_number AND metadata.customer:42</code>; empty finds every token.
            </>
          }
        >
          {(id, hint) => (
            <input
              id={id}
              class="query"
              value={text}
              onInput={(event) => setText(event.currentTarget.value)}
              aria-describedby={[hint, failure ? "query-problem" : ""].filter(Boolean).join(" ")}
              aria-invalid={failure ? "true" : undefined}
              spellcheck={false}
            />
          )}
        </Field>
        {failure && (
          <div id="query-problem" class="state error" role="alert">
            {column !== null ? (
              <>
                <pre class="query-pointer" aria-hidden="true">
                  {text}
                  {"\n"}
                  {`${" ".repeat(column - 1)}^`}
                </pre>
                <p data-column={column}>
                  At column {column}: {failure.body.errors.query[0].replace(/^column \d+: /, "")}
                </p>
              </>
            ) : (
              <p>{problemText(failure)}</p>
            )}
          </div>
        )}
        <button type="submit" disabled={busy}>
          Search
        </button>
      </form>
      {busy && !result && <p role="status">Searching…</p>}
      {result &&
        (result.tokens.length === 0 ? (
          <p class="state empty">No token matches.</p>
        ) : (
          <table>
            <caption>Tokens, newest first, as this key may see them</caption>
            <thead>
              <tr>
                <th scope="col">Id</th>
                <th scope="col">Type</th>
                <th scope="col">Containers</th>
                <th scope="col">Data</th>
                <th scope="col">Metadata</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {result.tokens.map((token) => (
                <tr key={token.id} data-token-id={token.id}>
                  <td>
                    <code>{token.id}</code>
                  </td>
                  <td>{token.type}</td>
                  <td>{(token.containers ?? []).join(", ")}</td>
                  <td>
                    <code data-token-data>{token.data === undefined ? "—" : JSON.stringify(token.data)}</code>
                  </td>
                  <td>
                    <code>{JSON.stringify(token.metadata ?? {})}</code>
                  </td>
                  <td>
                    <When iso={token.created_at} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        ))}
      {result?.next && (
        <button type="button" disabled={busy} onClick={() => search(result.next)}>
          More
        </button>
      )}
    </>
  );
}

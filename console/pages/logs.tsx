import { useState } from "preact/hooks";
import { query } from "../api";
import { Field, ListState, useLoad, When } from "../components";
import type { Session } from "../session";

interface Log {
  id: string;
  actor_id: string | null;
  actor_type: string;
  entity_type: string;
  entity_id: string | null;
  operation: string;
  message: string;
  status: number;
  trace_id: string;
  created_at: string;
  seq: number;
}

interface Verification {
  verified: boolean;
  checked: number;
  first_seq: number | null;
  last_seq: number | null;
  head_seq: number;
  anchor_seq: number;
  pending: number;
  complete: boolean;
  broken_at: { seq: number; entry_id: string | null; reason: string } | null;
}

const PAGE_SIZE = 20;

/** A datetime-local field's value (the browser's time zone) as an ISO instant. */
function isoOf(local: string): string | undefined {
  return local ? new Date(local).toISOString() : undefined;
}

/** A page of GET /logs: the first by number (with its total), the ones after by the cursor the page before answered. */
interface LogPage {
  pagination: { total_items?: number; next?: string };
  data: Log[];
}

export function LogsPage(_: { session: Session }) {
  const [filters, setFilters] = useState({ entity_type: "", entity_id: "", start: "", end: "", actor: "", operation: "" });
  // The cursors of the pages before the one shown: Older pushes the page's `next`, Newer pops.
  const [cursors, setCursors] = useState<string[]>([]);
  const path = `/logs${query({
    entity_type: filters.entity_type,
    entity_id: filters.entity_id.trim(),
    actor_id: filters.actor.trim(),
    operation: filters.operation.trim(),
    start_date: isoOf(filters.start),
    end_date: isoOf(filters.end),
    start: cursors.at(-1),
    size: PAGE_SIZE,
  })}`;
  const [logs, reloadLogs] = useLoad<LogPage>(path);
  const [types] = useLoad<{ display_name: string; value: string }[]>("/logs/entity-types");
  // What the fields show, kept as typed: a field bound to `filters` alone would be set back to the
  // applied value by any render before its change (the log's answer arriving while one types).
  const [typed, setTyped] = useState(filters);
  const type = (name: keyof typeof filters) => (event: Event) => {
    const value = (event.currentTarget as HTMLInputElement).value;
    setTyped((current) => ({ ...current, [name]: value }));
  };
  // Applied on change, from the state as it is then: two fields changed before a render (a blur and a
  // change) would otherwise each write over the other with the filters they were rendered with.
  const set = (name: keyof typeof filters) => (event: Event) => {
    const value = (event.currentTarget as HTMLInputElement).value;
    setTyped((current) => ({ ...current, [name]: value }));
    setFilters((current) => ({ ...current, [name]: value }));
    setCursors([]);
  };
  return (
    <>
      <ChainBadge />{" "}
      <button type="button" onClick={reloadLogs}>
        Refresh the log
      </button>
      <form class="filters" aria-label="Filter the log" onSubmit={(event) => event.preventDefault()}>
        <Field label="Entity type">
          {(id) => (
            <select id={id} value={filters.entity_type} onChange={set("entity_type")}>
              <option value="">Any</option>
              {types.state === "ready" &&
                types.data.map((type) => (
                  <option key={type.value} value={type.value}>
                    {type.display_name}
                  </option>
                ))}
            </select>
          )}
        </Field>
        <Field label="Entity id">
          {(id) => <input id={id} value={typed.entity_id} onInput={type("entity_id")} onChange={set("entity_id")} />}
        </Field>
        <Field label="Actor id" hint="The application that made the request">
          {(id, hint) => <input id={id} aria-describedby={hint} value={typed.actor} onInput={type("actor")} onChange={set("actor")} />}
        </Field>
        <Field label="Operation" hint="create, read, list, invoke …">
          {(id, hint) => (
            <input id={id} aria-describedby={hint} value={typed.operation} onInput={type("operation")} onChange={set("operation")} />
          )}
        </Field>
        <Field label="From (your time zone)">
          {(id) => <input id={id} type="datetime-local" value={typed.start} onInput={type("start")} onChange={set("start")} />}
        </Field>
        <Field label="Until (your time zone)">
          {(id) => <input id={id} type="datetime-local" value={typed.end} onInput={type("end")} onChange={set("end")} />}
        </Field>
      </form>
      <ListState loaded={logs.state === "ready" ? { state: "ready", data: logs.data.data } : logs} what="the log" empty="No entries match.">
        {(entries) => (
          <table>
            <caption>Audit log, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Time</th>
                <th scope="col">Actor</th>
                <th scope="col">Operation</th>
                <th scope="col">Entity</th>
                <th scope="col">Status</th>
                <th scope="col">Trace id</th>
              </tr>
            </thead>
            <tbody>
              {entries.map((log) => (
                <tr key={log.id} data-trace-id={log.trace_id}>
                  <td>
                    <When iso={log.created_at} />
                  </td>
                  <td>
                    {log.actor_type} <code>{log.actor_id ?? "—"}</code>
                  </td>
                  <td title={log.message}>{log.operation}</td>
                  <td>
                    {log.entity_type} <code>{log.entity_id ?? ""}</code>
                  </td>
                  <td class={log.status >= 400 ? "bad" : undefined}>{log.status}</td>
                  <td>
                    <code>{log.trace_id}</code>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </ListState>
      {logs.state === "ready" && (
        <div class="pager">
          <button type="button" disabled={cursors.length === 0} onClick={() => setCursors(cursors.slice(0, -1))}>
            Newer
          </button>
          <span data-log-page>
            Page {cursors.length + 1}
            {logs.data.pagination.total_items !== undefined &&
              ` of ${Math.max(1, Math.ceil(logs.data.pagination.total_items / PAGE_SIZE))} (${logs.data.pagination.total_items} ${logs.data.pagination.total_items === 1 ? "entry matches" : "entries match"})`}
          </span>
          <button
            type="button"
            disabled={!logs.data.pagination.next}
            onClick={() => logs.data.pagination.next && setCursors([...cursors, logs.data.pagination.next])}
          >
            Older
          </button>
        </div>
      )}
    </>
  );
}

/** GET /logs/verify as a badge that says what was checked. */
function ChainBadge() {
  const [verification, reload] = useLoad<Verification>("/logs/verify");
  if (verification.state === "loading")
    return (
      <p class="badge" role="status">
        Verifying the log's hash chain…
      </p>
    );
  if (verification.state === "error")
    return (
      <p class="badge bad" role="alert">
        The chain could not be verified: {verification.message}
      </p>
    );
  const v = verification.data;
  const range = v.first_seq === null ? "no entries" : `entries ${v.first_seq}–${v.last_seq}`;
  const text = v.verified
    ? `Chain verified: ${v.checked} entries checked (${range} of ${v.head_seq}${v.anchor_seq ? `, from the retention anchor at ${v.anchor_seq}` : ""})${v.complete ? "" : ", more remain"}${v.pending ? `; ${v.pending} not chained yet` : ""}`
    : `Chain broken at entry ${v.broken_at?.seq}: ${v.broken_at?.reason} (${v.checked} entries checked)`;
  return (
    <p class={`badge ${v.verified ? "good" : "bad"}`} role="status" data-chain={v.verified ? "verified" : "broken"}>
      {text}{" "}
      <button type="button" onClick={reload}>
        Verify again
      </button>
    </p>
  );
}

import { useMemo, useState } from "preact/hooks";
import { CountChart } from "../chart";
import { ListState, useLoad, When } from "../components";
import { may, type Session } from "../session";

/** GET /logs/summary: requests per hour by outcome, the busiest proxies and reactors, the latest errors. */
interface Summary {
  window: string;
  from: string;
  to: string;
  requests_by_hour: { hour: string; "2xx": number; "3xx": number; "4xx": number; "5xx": number }[];
  busiest_proxies: Busy[];
  busiest_reactors: Busy[];
  recent_errors: {
    created_at: string;
    operation: string;
    status: number;
    trace_id: string;
    entity_type: string;
    entity_id: string | null;
  }[];
}

interface Busy {
  id: string;
  name: string | null;
  calls: number;
  errors: number;
}

/** GET /tenants/self/reports/usage, with the vault's counts by container. */
interface Usage {
  token_report: {
    metrics_by_type: Record<string, { count: number; last_created_at: string | null }>;
    metrics_by_container: Record<string, { count: number }>;
    metrics_by_container_complete: boolean;
  };
  total_tokens: number;
}

const OUTCOMES = [
  { label: "2xx", color: "#1a7f37" },
  { label: "4xx", color: "#9a6700" },
  { label: "5xx", color: "#cf222e" },
] as const;

export function OverviewPage({ session }: { session: Session }) {
  return (
    <>
      {may(session, "log:read") ? <Activity /> : <p class="state empty">This key cannot read the log (log:read): no activity to show.</p>}
      {may(session, "tenant:read") ? (
        <Tokens />
      ) : (
        <p class="state empty">This key cannot read the tenant (tenant:read): no token counts.</p>
      )}
    </>
  );
}

function Activity() {
  const [window, setWindow] = useState<"24h" | "7d">("24h");
  const [summary, reload] = useLoad<Summary>(`/logs/summary?window=${window}`);
  const chart = useMemo(() => {
    if (summary.state !== "ready") return null;
    const hours = summary.data.requests_by_hour;
    return {
      times: hours.map((hour) => Date.parse(hour.hour) / 1000),
      series: OUTCOMES.map((outcome) => ({ ...outcome, counts: hours.map((hour) => hour[outcome.label]) })),
    };
  }, [summary]);
  return (
    <section aria-labelledby="activity">
      <h2 id="activity">Requests per hour</h2>
      <fieldset class="actions">
        <legend class="visually-hidden">Window</legend>
        {(["24h", "7d"] as const).map((option) => (
          <button key={option} type="button" aria-pressed={window === option} onClick={() => setWindow(option)}>
            {option === "24h" ? "Last 24 hours" : "Last 7 days"}
          </button>
        ))}
        <button type="button" onClick={reload}>
          Refresh
        </button>
      </fieldset>
      {summary.state === "loading" && <p role="status">Loading the activity…</p>}
      {summary.state === "error" && (
        <p class="state error" role="alert">
          Could not load the activity: {summary.message}
        </p>
      )}
      {summary.state === "ready" && chart && (
        <>
          <CountChart title={`Requests per hour, last ${window}, by outcome`} times={chart.times} series={chart.series} />
          <p data-total-requests>
            {OUTCOMES.map(
              (outcome) =>
                `${outcome.label}: ${chart.series.find((series) => series.label === outcome.label)!.counts.reduce((a, b) => a + b, 0)}`,
            ).join(" · ")}
          </p>
          <div class="columns">
            <BusyTable title="Busiest proxies" items={summary.data.busiest_proxies} />
            <BusyTable title="Busiest reactors" items={summary.data.busiest_reactors} />
          </div>
          <h3>Recent errors</h3>
          <ListState loaded={{ state: "ready", data: summary.data.recent_errors }} what="errors" empty="No errors in this window.">
            {(errors) => (
              <table>
                <caption class="visually-hidden">Recent errors, newest first</caption>
                <thead>
                  <tr>
                    <th scope="col">Time</th>
                    <th scope="col">Operation</th>
                    <th scope="col">Status</th>
                    <th scope="col">Entity</th>
                    <th scope="col">Trace id</th>
                  </tr>
                </thead>
                <tbody>
                  {errors.map((error) => (
                    <tr key={error.trace_id + error.created_at}>
                      <td>
                        <When iso={error.created_at} />
                      </td>
                      <td>{error.operation}</td>
                      <td>{error.status}</td>
                      <td>
                        {error.entity_type} <code>{error.entity_id ?? ""}</code>
                      </td>
                      <td>
                        <code>{error.trace_id}</code>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </ListState>
        </>
      )}
    </section>
  );
}

function BusyTable({ title, items }: { title: string; items: Busy[] }) {
  return (
    <div>
      <h3>{title}</h3>
      <ListState loaded={{ state: "ready", data: items }} what={title} empty="No calls in this window.">
        {(rows) => (
          <table>
            <caption class="visually-hidden">{title}</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Calls</th>
                <th scope="col">Errors</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((row) => (
                <tr key={row.id}>
                  <td>{row.name ?? <code>{row.id}</code>}</td>
                  <td>{row.calls}</td>
                  <td>{row.errors}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </ListState>
    </div>
  );
}

function Tokens() {
  const [usage] = useLoad<Usage>("/tenants/self/reports/usage");
  if (usage.state === "loading") return <p role="status">Loading token counts…</p>;
  if (usage.state === "error")
    return (
      <p class="state error" role="alert">
        Could not load token counts: {usage.message}
      </p>
    );
  const byType = Object.entries(usage.data.token_report.metrics_by_type ?? {});
  const byContainer = Object.entries(usage.data.token_report.metrics_by_container);
  return (
    <section aria-labelledby="tokens">
      <h2 id="tokens">Tokens ({usage.data.total_tokens})</h2>
      <div class="columns">
        <ListState loaded={{ state: "ready", data: byType }} what="token types" empty="No tokens yet.">
          {(rows) => (
            <table>
              <caption>Tokens by type</caption>
              <thead>
                <tr>
                  <th scope="col">Type</th>
                  <th scope="col">Tokens</th>
                  <th scope="col">Last created</th>
                </tr>
              </thead>
              <tbody>
                {rows.map(([type, metric]) => (
                  <tr key={type}>
                    <td>{type}</td>
                    <td>{metric.count}</td>
                    <td>
                      <When iso={metric.last_created_at} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </ListState>
        <ListState loaded={{ state: "ready", data: byContainer }} what="containers" empty="No containers yet.">
          {(rows) => (
            <table>
              <caption>Tokens by container</caption>
              <thead>
                <tr>
                  <th scope="col">Container</th>
                  <th scope="col">Tokens</th>
                </tr>
              </thead>
              <tbody>
                {rows.map(([container, metric]) => (
                  <tr key={container}>
                    <td>
                      <code>{container}</code>
                    </td>
                    <td>{metric.count}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </ListState>
      </div>
      {!usage.data.token_report.metrics_by_container_complete && <p class="hint">Only the first containers, in path order, are listed.</p>}
    </section>
  );
}

import { useState } from "preact/hooks";
import { call, type Reply } from "../api";
import { ConfirmButton, Field, ListState, Problem, ShownOnce, useLoad, When } from "../components";
import { may, type Session } from "../session";

interface Webhook {
  id: string;
  name: string;
  url: string;
  events: string[];
  status: "enabled" | "disabled";
  created_at: string;
}

interface Delivery {
  event_id: string;
  event_type: string;
  status: "delivered" | "retrying" | "failed";
  attempts: number;
  last_outcome: string | null;
  first_attempt_at: string;
  last_attempt_at: string;
}

/** Webhook endpoints, and the recent deliveries of the one chosen (GET /webhooks/{id}/deliveries). */
export function WebhooksPage({ session }: { session: Session }) {
  const [webhooks, reload] = useLoad<{ data: Webhook[] }>("/webhooks?size=100");
  const [secret, setSecret] = useState<{ name: string; secret: string } | null>(null);
  const [shown, setShown] = useState<Webhook | null>(null);
  const list = webhooks.state === "ready" ? { state: "ready" as const, data: webhooks.data.data } : webhooks;
  return (
    <>
      {may(session, "webhook:create") && (
        <CreateWebhook
          onCreated={(created) => {
            setSecret(created);
            reload();
          }}
        />
      )}
      {secret && <ShownOnce label={`The signing secret of ${secret.name}:`} secret={secret.secret} />}
      <h2>Endpoints</h2>
      <ListState loaded={list} what="webhooks" empty="No webhooks yet.">
        {(items) => (
          <table>
            <caption>Webhook endpoints</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">URL</th>
                <th scope="col">Events</th>
                <th scope="col">Status</th>
                <th scope="col">Created</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {items.map((webhook) => (
                <tr key={webhook.id}>
                  <td>{webhook.name}</td>
                  <td>
                    <code>{webhook.url}</code>
                  </td>
                  <td>{webhook.events.join(", ")}</td>
                  <td class={webhook.status === "disabled" ? "bad" : undefined}>{webhook.status}</td>
                  <td>
                    <When iso={webhook.created_at} />
                  </td>
                  <td>
                    <button type="button" onClick={() => setShown(webhook)} aria-pressed={shown?.id === webhook.id}>
                      Deliveries<span class="visually-hidden"> of {webhook.name}</span>
                    </button>{" "}
                    {may(session, "webhook:delete") && (
                      <ConfirmButton
                        label={`Delete ${webhook.name}`}
                        destroys={`The webhook ${webhook.name} is deleted, with the deliveries still queued for it.`}
                        confirm="Delete the webhook"
                        onConfirm={async () => {
                          if ((await call("DELETE", `/webhooks/${webhook.id}`)).ok) reload();
                        }}
                      />
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </ListState>
      {shown && <Deliveries key={shown.id} webhook={shown} />}
    </>
  );
}

/** What became of the webhook's recent events: status, attempts and the last failure, never a payload. */
function Deliveries({ webhook }: { webhook: Webhook }) {
  const [deliveries, reload] = useLoad<{ data: Delivery[] }>(`/webhooks/${webhook.id}/deliveries`);
  const list = deliveries.state === "ready" ? { state: "ready" as const, data: deliveries.data.data } : deliveries;
  return (
    <section aria-label={`Deliveries of ${webhook.name}`}>
      <h2>Deliveries of {webhook.name}</h2>
      <button type="button" onClick={reload}>
        Refresh the deliveries
      </button>
      <ListState loaded={list} what="deliveries" empty="No deliveries yet: events are sent as they happen.">
        {(items) => (
          <table>
            <caption class="visually-hidden">Recent deliveries of {webhook.name}, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">Type</th>
                <th scope="col">Status</th>
                <th scope="col">Attempts</th>
                <th scope="col">Last failure</th>
                <th scope="col">Last attempt</th>
              </tr>
            </thead>
            <tbody>
              {items.map((delivery) => (
                <tr key={delivery.event_id}>
                  <td>
                    <code>{delivery.event_id}</code>
                  </td>
                  <td>{delivery.event_type}</td>
                  <td class={delivery.status === "delivered" ? undefined : "bad"}>{delivery.status}</td>
                  <td>{delivery.attempts}</td>
                  <td>{delivery.last_outcome ?? "—"}</td>
                  <td>
                    <When iso={delivery.last_attempt_at} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </ListState>
    </section>
  );
}

function CreateWebhook({ onCreated }: { onCreated: (created: { name: string; secret: string }) => void }) {
  const [types] = useLoad<string[]>("/webhooks/event-types");
  const [name, setName] = useState("");
  const [url, setUrl] = useState("");
  const [events, setEvents] = useState<string[]>([]);
  const [failure, setFailure] = useState<Reply | null>(null);
  return (
    <form
      class="panel"
      aria-label="Create a webhook"
      onSubmit={async (event) => {
        event.preventDefault();
        const reply = await call<Webhook & { secret: string }>("POST", "/webhooks", { name, url, events });
        setFailure(reply);
        if (reply.ok) onCreated({ name: reply.body.name, secret: reply.body.secret });
      }}
    >
      <h2>Create a webhook</h2>
      <Field label="Name">{(id) => <input id={id} required value={name} onInput={(event) => setName(event.currentTarget.value)} />}</Field>
      <Field label="URL">
        {(id) => <input id={id} type="url" required value={url} onInput={(event) => setUrl(event.currentTarget.value)} />}
      </Field>
      <fieldset>
        <legend>Events</legend>
        {types.state === "ready" &&
          types.data.map((type) => (
            <label key={type} class="check">
              <input
                type="checkbox"
                checked={events.includes(type)}
                onChange={() => setEvents(events.includes(type) ? events.filter((held) => held !== type) : [...events, type])}
              />{" "}
              {type}
            </label>
          ))}
      </fieldset>
      <Problem reply={failure} />
      <button type="submit">Create the webhook</button>
    </form>
  );
}

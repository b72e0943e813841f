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

/** Webhook endpoints. Their deliveries have no route of the API yet, so they are not shown (see docs/console.md). */
export function WebhooksPage({ session }: { session: Session }) {
  const [webhooks, reload] = useLoad<{ data: Webhook[] }>("/webhooks?size=100");
  const [secret, setSecret] = useState<{ name: string; secret: string } | null>(null);
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
    </>
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

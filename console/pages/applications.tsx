import { useState } from "preact/hooks";
import { call, query, type Reply } from "../api";
import { ConfirmButton, Field, ListState, Problem, ShownOnce, useLoad, When } from "../components";
import { may, type Session } from "../session";

interface Rule {
  description?: string | null;
  priority: number;
  container?: string;
  transform: "reveal" | "mask" | "redact";
  permissions: string[];
}

interface Application {
  id: string;
  name: string;
  type: string;
  permissions: string[];
  rules?: Rule[];
  allowed_origins?: string[];
  created_at: string;
  expires_at?: string | null;
}

interface Key {
  id: string;
  created_at: string;
  expires_at: string | null;
}

interface Permission {
  type: string;
  description: string;
}

/** What each transform of an access rule lets the key see of a token's data. */
const TRANSFORMS = {
  reveal: "reveals: the whole value",
  mask: "masks: only what the token's mask shows (such as a card's last four digits)",
  redact: "redacts: no data at all, only the token's id, type and metadata",
} as const;

const CREATABLE = ["private", "public", "management"] as const;

export function ApplicationsPage({ session }: { session: Session }) {
  const [applications, reload] = useLoad<{ data: Application[] }>("/applications?size=100");
  const [created, setCreated] = useState<{ name: string; key: string } | null>(null);
  const list = applications.state === "ready" ? { state: "ready" as const, data: applications.data.data } : applications;
  return (
    <>
      {may(session, "application:create") && (
        <CreateApplication
          onCreated={(application, key) => {
            setCreated(key ? { name: application.name, key } : null);
            reload();
          }}
        />
      )}
      {created && <ShownOnce label={`The key of ${created.name}:`} secret={created.key} />}
      <h2>Applications</h2>
      <ListState loaded={list} what="applications" empty="No applications yet.">
        {(items) => (
          <ul class="cards">
            {items.map((application) => (
              <li key={application.id} data-application={application.name}>
                <ApplicationCard application={application} session={session} onChanged={reload} />
              </li>
            ))}
          </ul>
        )}
      </ListState>
    </>
  );
}

function ApplicationCard({ application, session, onChanged }: { application: Application; session: Session; onChanged: () => void }) {
  const [open, setOpen] = useState(false);
  const [failure, setFailure] = useState<Reply | null>(null);
  return (
    <article aria-label={application.name}>
      <h3>
        {application.name} <span class="tag">{application.type}</span>
      </h3>
      <p>
        <code>{application.id}</code> · created <When iso={application.created_at} />
        {application.expires_at && (
          <>
            {" "}
            · expires <When iso={application.expires_at} />
          </>
        )}
      </p>
      {application.rules && application.rules.length > 0 ? (
        <ul>
          {application.rules.map((rule) => (
            <li key={rule.priority}>
              {rule.priority}: on <code>{rule.container ?? "named tokens"}</code> {TRANSFORMS[rule.transform]} —{" "}
              {rule.permissions.join(", ")}
            </li>
          ))}
        </ul>
      ) : (
        <p>Permissions: {application.permissions.join(", ") || "none"}</p>
      )}
      {application.allowed_origins && application.allowed_origins.length > 0 && (
        <p>Allowed origins: {application.allowed_origins.join(", ")}</p>
      )}
      <div class="actions">
        <button type="button" aria-expanded={open} onClick={() => setOpen(!open)}>
          {open ? "Hide keys" : "Keys"}
        </button>
        {may(session, "application:delete") && application.id !== session.application.id && (
          <ConfirmButton
            label={`Delete ${application.name}`}
            destroys={`The application ${application.name} and every one of its keys are deleted: anything using them stops working at once.`}
            confirm="Delete the application"
            onConfirm={async () => {
              const reply = await call("DELETE", `/applications/${application.id}`);
              setFailure(reply);
              if (reply.ok) onChanged();
            }}
          />
        )}
      </div>
      <Problem reply={failure} />
      {open && <Keys application={application} session={session} />}
    </article>
  );
}

function Keys({ application, session }: { application: Application; session: Session }) {
  const [keys, reload] = useLoad<Key[]>(`/applications/${application.id}/keys`);
  const [created, setCreated] = useState<string | null>(null);
  const [failure, setFailure] = useState<Reply | null>(null);
  return (
    <section aria-label={`Keys of ${application.name}`}>
      {may(session, "application:create") && (
        <button
          type="button"
          onClick={async () => {
            const reply = await call<{ key: string }>("POST", `/applications/${application.id}/keys`, {});
            setFailure(reply);
            if (reply.ok) {
              setCreated(reply.body.key);
              reload();
            }
          }}
        >
          Create a key
        </button>
      )}
      {created && <ShownOnce label="The new key:" secret={created} />}
      <Problem reply={failure} />
      <ListState loaded={keys} what="keys" empty="This application has no key.">
        {(items) => (
          <table>
            <caption>Keys of {application.name}</caption>
            <thead>
              <tr>
                <th scope="col">Key id</th>
                <th scope="col">Created</th>
                <th scope="col">Expires</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {items.map((key) => (
                <tr key={key.id}>
                  <td>
                    <code>{key.id}</code>
                  </td>
                  <td>
                    <When iso={key.created_at} />
                  </td>
                  <td>{key.expires_at ? <When iso={key.expires_at} /> : "never"}</td>
                  <td>
                    {may(session, "application:delete") && (
                      <ConfirmButton
                        label={`Revoke key ${key.id}`}
                        destroys={`The key ${key.id} of ${application.name} stops working at once${application.id === session.application.id ? "; it may be the key this session was opened with, which ends the session" : ""}.`}
                        confirm="Revoke the key"
                        onConfirm={async () => {
                          const reply = await call("DELETE", `/applications/${application.id}/keys/${key.id}`);
                          setFailure(reply);
                          if (reply.ok) reload();
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
    </section>
  );
}

function CreateApplication({ onCreated }: { onCreated: (application: Application, key: string | null) => void }) {
  const [name, setName] = useState("");
  const [type, setType] = useState<(typeof CREATABLE)[number]>("private");
  const [permissions, setPermissions] = useState<string[]>([]);
  const [rules, setRules] = useState<Rule[]>([]);
  const [origins, setOrigins] = useState("");
  const [failure, setFailure] = useState<Reply | null>(null);
  const [available] = useLoad<Permission[]>(`/permissions${query({ application_type: type })}`);
  const choices = available.state === "ready" ? available.data : [];
  const toggle = (list: string[], permission: string) =>
    list.includes(permission) ? list.filter((held) => held !== permission) : [...list, permission];
  return (
    <form
      class="panel"
      aria-label="Create an application"
      onSubmit={async (event) => {
        event.preventDefault();
        const body: Record<string, unknown> = { name, type };
        if (rules.length > 0) body.rules = rules;
        else body.permissions = permissions;
        if (type === "public")
          body.allowed_origins = origins
            .split(/\s+/)
            .map((origin) => origin.trim())
            .filter(Boolean);
        const reply = await call<Application & { key?: string }>("POST", "/applications", body);
        setFailure(reply);
        if (reply.ok) {
          onCreated(reply.body, reply.body.key ?? null);
          setName("");
          setRules([]);
          setPermissions([]);
        }
      }}
    >
      <h2>Create an application</h2>
      <Field label="Name">{(id) => <input id={id} value={name} required onInput={(event) => setName(event.currentTarget.value)} />}</Field>
      <Field label="Type" hint="private: a server's key; public: a browser's (token creation only); management: sets the vault up.">
        {(id, hint) => (
          <select
            id={id}
            aria-describedby={hint}
            value={type}
            onChange={(event) => {
              setType(event.currentTarget.value as (typeof CREATABLE)[number]);
              setPermissions([]);
              setRules([]);
            }}
          >
            {CREATABLE.map((option) => (
              <option key={option} value={option}>
                {option}
              </option>
            ))}
          </select>
        )}
      </Field>
      {rules.length === 0 && (
        <fieldset>
          <legend>Permissions (on every container: create, read and search mask; use reveals)</legend>
          {choices.map((permission) => (
            <label key={permission.type} class="check">
              <input
                type="checkbox"
                checked={permissions.includes(permission.type)}
                onChange={() => setPermissions(toggle(permissions, permission.type))}
              />{" "}
              <code>{permission.type}</code> — {permission.description}
            </label>
          ))}
        </fieldset>
      )}
      {type === "private" && (
        <fieldset>
          <legend>Access rules (instead of permissions; the first rule, by priority, that matches a token decides)</legend>
          {rules.map((rule, index) => (
            <RuleEditor
              key={index}
              index={index}
              rule={rule}
              choices={choices}
              onChange={(changed) => setRules(rules.map((old, at) => (at === index ? changed : old)))}
              onRemove={() => setRules(rules.filter((_, at) => at !== index))}
            />
          ))}
          <button
            type="button"
            onClick={() => setRules([...rules, { priority: rules.length + 1, container: "/", transform: "mask", permissions: [] }])}
          >
            Add a rule
          </button>
        </fieldset>
      )}
      {type === "public" && (
        <Field label="Allowed origins" hint="Exact origins, one per line (https://shop.example.com); empty allows any.">
          {(id, hint) => (
            <textarea id={id} aria-describedby={hint} value={origins} onInput={(event) => setOrigins(event.currentTarget.value)} />
          )}
        </Field>
      )}
      <Problem reply={failure} />
      <button type="submit">Create the application</button>
    </form>
  );
}

function RuleEditor(props: { index: number; rule: Rule; choices: Permission[]; onChange: (rule: Rule) => void; onRemove: () => void }) {
  const { rule, index } = props;
  return (
    <fieldset class="rule">
      <legend>Rule {index + 1}</legend>
      <Field label={`Rule ${index + 1} priority`}>
        {(id) => (
          <input
            id={id}
            type="number"
            min={0}
            value={rule.priority}
            onInput={(event) => props.onChange({ ...rule, priority: Number(event.currentTarget.value) })}
          />
        )}
      </Field>
      <Field label={`Rule ${index + 1} container`} hint="A container and its sub-containers; / is every token.">
        {(id, hint) => (
          <input
            id={id}
            aria-describedby={hint}
            value={rule.container}
            onInput={(event) => props.onChange({ ...rule, container: event.currentTarget.value })}
          />
        )}
      </Field>
      <Field label={`Rule ${index + 1} transform`} hint={`It ${TRANSFORMS[rule.transform]}.`}>
        {(id, hint) => (
          <select
            id={id}
            aria-describedby={hint}
            value={rule.transform}
            onChange={(event) => props.onChange({ ...rule, transform: event.currentTarget.value as Rule["transform"] })}
          >
            {Object.keys(TRANSFORMS).map((transform) => (
              <option key={transform} value={transform}>
                {transform}
              </option>
            ))}
          </select>
        )}
      </Field>
      <fieldset>
        <legend>Rule {index + 1} permissions</legend>
        {props.choices
          .filter((permission) => permission.type.startsWith("token:"))
          .map((permission) => (
            <label key={permission.type} class="check">
              <input
                type="checkbox"
                checked={rule.permissions.includes(permission.type)}
                onChange={() =>
                  props.onChange({
                    ...rule,
                    permissions: rule.permissions.includes(permission.type)
                      ? rule.permissions.filter((held) => held !== permission.type)
                      : [...rule.permissions, permission.type],
                  })
                }
              />{" "}
              <code>{permission.type}</code>
            </label>
          ))}
      </fieldset>
      <button type="button" onClick={props.onRemove}>
        Remove rule {index + 1}
      </button>
    </fieldset>
  );
}

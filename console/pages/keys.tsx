import { useState } from "preact/hooks";
import { call, headerPrefix, type Reply } from "../api";
import { Field, Problem, When } from "../components";
import type { Session } from "../session";

interface Rotation {
  from_version: number;
  to_version: number;
  state: "waiting" | "running" | "finishing" | "done";
  done: number;
  total: number | null;
  started_at: string;
  finished_at: string | null;
  last_error: string | null;
}

/**
 * The operator's view of a tenant's data-key rotation. Operator routes take the operator key, which no
 * session stands for: it is typed for each look, sent in its header, and the field cleared.
 */
export function KeysPage({ session }: { session: Session }) {
  const [tenant, setTenant] = useState(session.tenant_id);
  const [reply, setReply] = useState<Reply<Rotation> | null>(null);
  return (
    <>
      <p>Rotation status is an operator's: type the operator key to look. It is used for this one request and not kept.</p>
      <form
        class="panel"
        aria-label="Rotation status"
        onSubmit={async (event) => {
          event.preventDefault();
          const field = event.currentTarget.elements.namedItem("operator_key") as HTMLInputElement;
          const operatorKey = field.value;
          field.value = "";
          setReply(
            await call<Rotation>("GET", `/tenants/${encodeURIComponent(tenant)}/rotation`, undefined, {
              headers: { [`${headerPrefix()}-OPERATOR-KEY`]: operatorKey },
              endsSession: false,
            }),
          );
        }}
      >
        <Field label="Tenant id">
          {(id) => <input id={id} required value={tenant} onInput={(event) => setTenant(event.currentTarget.value)} />}
        </Field>
        <Field label="Operator key">{(id) => <input id={id} name="operator_key" type="password" autocomplete="off" required />}</Field>
        <button type="submit">Show the rotation</button>
      </form>
      {reply && reply.status === 404 && <p class="state empty">This tenant's data keys have never been rotated.</p>}
      {reply && reply.status !== 404 && <Problem reply={reply} />}
      {reply?.ok && <RotationStatus rotation={reply.body} />}
    </>
  );
}

function RotationStatus({ rotation }: { rotation: Rotation }) {
  const total = rotation.total ?? 0;
  return (
    <section aria-labelledby="rotation">
      <h2 id="rotation">
        Version {rotation.from_version} → {rotation.to_version}: {rotation.state}
      </h2>
      <label class="block">
        Records re-encrypted: {rotation.done} of {rotation.total ?? "not counted yet"}
        <progress max={Math.max(total, 1)} value={rotation.state === "done" ? Math.max(total, 1) : rotation.done} />
      </label>
      <p>
        Started <When iso={rotation.started_at} />
        {rotation.finished_at && (
          <>
            , finished <When iso={rotation.finished_at} />
          </>
        )}
      </p>
      {rotation.last_error && (
        <p class="state error" role="alert">
          Retrying after: {rotation.last_error}
        </p>
      )}
    </section>
  );
}

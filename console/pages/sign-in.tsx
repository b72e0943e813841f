import { useState } from "preact/hooks";
import { call, type Reply } from "../api";
import { Field, Problem } from "../components";
import type { Session } from "../session";

/**
 * The key is read from the field once, sent to POST /console/session, and the field cleared: the
 * console keeps the session cookie (HttpOnly, out of this script's reach), never the key.
 */
export function SignInPage(props: { ended: boolean; onSignedIn: (session: Session) => void }) {
  const [failure, setFailure] = useState<Reply | null>(null);
  const [busy, setBusy] = useState(false);
  return (
    <main class="center sign-in">
      <h1>Sign in to the token vault console</h1>
      {props.ended && (
        <p class="state error" role="alert" data-session-ended>
          Your session ended: it expired, was signed out, or its key was revoked. Sign in again.
        </p>
      )}
      <form
        onSubmit={async (event) => {
          event.preventDefault();
          const form = event.currentTarget;
          const field = form.elements.namedItem("api_key") as HTMLInputElement;
          const apiKey = field.value;
          field.value = "";
          setBusy(true);
          const reply = await call<Session>("POST", "/console/session", { api_key: apiKey }, { endsSession: false });
          setBusy(false);
          if (reply.ok) props.onSignedIn(reply.body);
          else setFailure(reply);
        }}
      >
        <Field
          label="API key"
          hint="A management or private key. It is exchanged for a session and not kept; the console can do only what this key may do."
        >
          {(id, hint) => (
            <input id={id} name="api_key" type="password" autocomplete="off" spellcheck={false} required aria-describedby={hint} />
          )}
        </Field>
        <Problem reply={failure} />
        <button type="submit" disabled={busy}>
          Sign in
        </button>
      </form>
    </main>
  );
}

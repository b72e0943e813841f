import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useId, useRef, useState } from "preact/hooks";
import { call, problemText, type Reply } from "./api";

/** What a page loaded from the vault: loading, failed (with the problem), or its answer. */
export type Loaded<T> = { state: "loading" } | { state: "error"; message: string } | { state: "ready"; data: T };

/** GETs `path` (again when it or `reload()` changes it); null skips the call. */
export function useLoad<T = any>(path: string | null): [Loaded<T>, () => void] {
  const [loaded, setLoaded] = useState<Loaded<T>>({ state: "loading" });
  const [round, setRound] = useState(0);
  useEffect(() => {
    if (path === null) return;
    let current = true;
    setLoaded({ state: "loading" });
    call<T>("GET", path).then((reply) => {
      if (current) setLoaded(reply.ok ? { state: "ready", data: reply.body } : { state: "error", message: problemText(reply) });
    });
    return () => {
      current = false;
    };
  }, [path, round]);
  return [loaded, useCallback(() => setRound((n) => n + 1), [])];
}

/** The loading, error and empty states every list shows, and the list itself once it has items. */
export function ListState<T>(props: {
  loaded: Loaded<T[]>;
  what: string;
  empty: ComponentChildren;
  children: (items: T[]) => ComponentChildren;
}) {
  const { loaded, what } = props;
  if (loaded.state === "loading")
    return (
      <p class="state" role="status">
        Loading {what}…
      </p>
    );
  if (loaded.state === "error")
    return (
      <p class="state error" role="alert">
        Could not load {what}: {loaded.message}
      </p>
    );
  if (loaded.data.length === 0) return <p class="state empty">{props.empty}</p>;
  return <>{props.children(loaded.data)}</>;
}

/** A date as the browser's time zone shows it, with the exact instant for machines. */
export function When({ iso }: { iso: string | null | undefined }) {
  if (!iso) return <span>—</span>;
  const date = new Date(iso);
  return <time dateTime={iso}>{Number.isNaN(date.getTime()) ? iso : date.toLocaleString()}</time>;
}

/** A labelled field: the label names the control for screen readers; `hint` describes it. */
export function Field(props: {
  label: string;
  hint?: ComponentChildren;
  children: (id: string, describedBy?: string) => ComponentChildren;
}) {
  const id = useId();
  const hintId = props.hint ? `${id}-hint` : undefined;
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      {props.children(id, hintId)}
      {props.hint && (
        <p class="hint" id={hintId}>
          {props.hint}
        </p>
      )}
    </div>
  );
}

/**
 * A destructive action's button: it opens a modal dialog that names what the action destroys, and
 * runs it only when confirmed. The dialog keeps focus while open and gives it back when closed.
 */
export function ConfirmButton(props: { label: string; destroys: string; confirm: string; onConfirm: () => Promise<unknown> | undefined }) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [busy, setBusy] = useState(false);
  const titleId = useId();
  return (
    <>
      <button type="button" class="danger" onClick={() => dialog.current?.showModal()}>
        {props.label}
      </button>
      <dialog ref={dialog} aria-labelledby={titleId}>
        <h2 id={titleId}>{props.label}?</h2>
        <p>{props.destroys}</p>
        <div class="actions">
          <button type="button" onClick={() => dialog.current?.close()}>
            Cancel
          </button>
          <button
            type="button"
            class="danger"
            disabled={busy}
            onClick={async () => {
              setBusy(true);
              await props.onConfirm();
              setBusy(false);
              dialog.current?.close();
            }}
          >
            {props.confirm}
          </button>
        </div>
      </dialog>
    </>
  );
}

/** A secret shown once (a new key, a webhook's secret), with a button that copies it. */
export function ShownOnce({ label, secret }: { label: string; secret: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <div class="once" role="status">
      <p>
        <strong>{label}</strong> It is shown this once: copy it now.
      </p>
      <code data-secret>{secret}</code>{" "}
      <button
        type="button"
        onClick={async () => {
          await navigator.clipboard?.writeText(secret).catch(() => {});
          setCopied(true);
        }}
      >
        {copied ? "Copied" : "Copy"}
      </button>
    </div>
  );
}

/** A failed call's problem, announced to screen readers. */
export function Problem({ reply }: { reply: Reply | null }) {
  if (!reply || reply.ok) return null;
  return (
    <p class="state error" role="alert">
      {problemText(reply)}
      {reply.traceId && <> (trace id {reply.traceId})</>}
    </p>
  );
}

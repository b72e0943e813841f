/**
 * The vault's public API as the console calls it: same origin, the session cookie and nothing else
 * (the console holds no key), JSON both ways. A 401 on any call means the session ended (signed out
 * elsewhere, expired, or its key revoked): the shell is told and shows the sign-in page.
 */

export interface Reply<T = any> {
  status: number;
  ok: boolean;
  body: T;
  traceId: string | null;
}

let sessionEnded: () => void = () => {};
/** Learned from the first answer's `{P}-TRACE-ID`: the deployment's header prefix (SVC, BT …). */
let prefix = "SVC";

export function onSessionEnded(listener: () => void): void {
  sessionEnded = listener;
}

export function headerPrefix(): string {
  return prefix;
}

export interface CallOptions {
  headers?: Record<string, string>;
  contentType?: string;
  /** Sign-in answers 401 to a wrong key: that ends no session. */
  endsSession?: boolean;
}

export async function call<T = any>(method: string, path: string, body?: unknown, options: CallOptions = {}): Promise<Reply<T>> {
  const { headers = {}, contentType = "application/json", endsSession = true } = options;
  let response: Response;
  try {
    response = await fetch(path, {
      method,
      credentials: "same-origin",
      cache: "no-store",
      redirect: "error",
      headers: { ...(body === undefined ? {} : { "content-type": contentType }), ...headers },
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    });
  } catch {
    const body: any = { title: "The vault could not be reached", detail: "Check the connection and try again." };
    return { status: 0, ok: false, body, traceId: null };
  }
  let traceId: string | null = null;
  response.headers.forEach((value, name) => {
    const match = /^(.+)-trace-id$/i.exec(name);
    if (match?.[1]) {
      prefix = match[1].toUpperCase();
      traceId = value;
    }
  });
  const text = await response.text();
  let parsed: any = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {}
  if (response.status === 401 && endsSession) sessionEnded();
  return { status: response.status, ok: response.ok, body: parsed, traceId };
}

/** What a failed call says, in one line: the problem's detail and each invalid field. */
export function problemText(reply: Reply): string {
  const body = reply.body ?? {};
  const fields = body.errors
    ? Object.entries(body.errors as Record<string, string[]>).map(([field, messages]) => `${field}: ${messages.join("; ")}`)
    : [];
  const main = body.detail ?? body.title ?? `The vault answered ${reply.status}`;
  return [main, ...fields.filter((field) => !main.includes(field))].join(" — ");
}

/** A query string of the defined values. */
export function query(parameters: Record<string, string | number | undefined | null>): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(parameters))
    if (value !== undefined && value !== null && value !== "") search.set(name, String(value));
  const text = search.toString();
  return text ? `?${text}` : "";
}

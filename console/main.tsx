import "uplot/dist/uPlot.min.css";
import "./console.css";
import { render } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { call, onSessionEnded } from "./api";
import { ApplicationsPage } from "./pages/applications";
import { KeysPage } from "./pages/keys";
import { LogsPage } from "./pages/logs";
import { OverviewPage } from "./pages/overview";
import { ProxiesPage } from "./pages/proxies";
import { ReactorsPage } from "./pages/reactors";
import { SignInPage } from "./pages/sign-in";
import { TokensPage } from "./pages/tokens";
import { WebhooksPage } from "./pages/webhooks";
import type { Session } from "./session";

/** The pages, in the navigation's order; the address's hash (#/logs) names the one shown, never anything secret. */
const PAGES = [
  { path: "overview", title: "Overview", Page: OverviewPage },
  { path: "applications", title: "Applications", Page: ApplicationsPage },
  { path: "tokens", title: "Tokens", Page: TokensPage },
  { path: "proxies", title: "Proxies", Page: ProxiesPage },
  { path: "reactors", title: "Reactors", Page: ReactorsPage },
  { path: "logs", title: "Logs", Page: LogsPage },
  { path: "webhooks", title: "Webhooks", Page: WebhooksPage },
  { path: "keys", title: "Keys", Page: KeysPage },
] as const;

type Shell = { state: "checking" } | { state: "signed-out"; ended: boolean } | { state: "signed-in"; session: Session };

function currentPath(): string {
  const path = location.hash.replace(/^#\/?/, "");
  return PAGES.some((page) => page.path === path) ? path : "overview";
}

function Console() {
  const [shell, setShell] = useState<Shell>({ state: "checking" });
  const [path, setPath] = useState(currentPath);
  const main = useRef<HTMLElement>(null);

  useEffect(() => {
    onSessionEnded(() => setShell((now) => (now.state === "signed-in" ? { state: "signed-out", ended: true } : now)));
    call<Session>("GET", "/console/session", undefined, { endsSession: false }).then((reply) =>
      setShell(reply.ok ? { state: "signed-in", session: reply.body } : { state: "signed-out", ended: false }),
    );
    const follow = () => setPath(currentPath());
    addEventListener("hashchange", follow);
    return () => removeEventListener("hashchange", follow);
  }, []);

  const page = PAGES.find((candidate) => candidate.path === path) ?? PAGES[0];
  useEffect(() => {
    document.title = shell.state === "signed-in" ? `${page.title} · Token vault console` : "Sign in · Token vault console";
    // A new page takes focus, so a screen reader starts reading it and the keyboard continues from it.
    if (shell.state === "signed-in") main.current?.focus();
  }, [path, shell.state]);

  if (shell.state === "checking")
    return (
      <main class="center">
        <p role="status">Loading the console…</p>
      </main>
    );
  if (shell.state === "signed-out")
    return <SignInPage ended={shell.ended} onSignedIn={(session) => setShell({ state: "signed-in", session })} />;

  const { session } = shell;
  const signOut = async () => {
    await call("DELETE", "/console/session", undefined, { endsSession: false });
    setShell({ state: "signed-out", ended: false });
  };
  return (
    <>
      <button type="button" class="skip" onClick={() => main.current?.focus()}>
        Skip to the page
      </button>
      <header>
        <span class="brand">Token vault console</span>
        <span class="identity" data-identity>
          Signed in as <strong>{session.application.name}</strong> ({session.application.type} application) · tenant{" "}
          <code>{session.tenant_id}</code>
        </span>
        <button type="button" onClick={signOut}>
          Sign out
        </button>
      </header>
      <nav aria-label="Console">
        <ul>
          {PAGES.map((candidate) => (
            <li key={candidate.path}>
              <a href={`#/${candidate.path}`} aria-current={candidate.path === page.path ? "page" : undefined}>
                {candidate.title}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main" ref={main} tabIndex={-1}>
        <h1>{page.title}</h1>
        <page.Page session={session} />
      </main>
    </>
  );
}

render(<Console />, document.getElementById("console")!);

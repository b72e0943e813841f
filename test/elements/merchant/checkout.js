// The merchant's checkout code, as a merchant writes it with the elements; the tests drive it
// through `checkout` and read the events each element gave it.
window.checkout = {
  vault: null,
  elements: {},
  events: [],

  async init(publicKey) {
    this.vault = await window.TokenVaultElements.init(publicKey);
  },

  /** Creates an element of the kind, listens to all its events and mounts it in a new box with the name as id. */
  async mount(name, kind, options) {
    const element = this.vault.createElement(kind, options);
    for (const event of ["ready", "change", "focus", "blur"]) {
      element.on(event, (payload) => this.events.push({ element: name, event, payload }));
    }
    const box = document.createElement("div");
    box.id = name;
    document.body.append(box);
    this.elements[name] = element;
    await element.mount(box);
  },

  /** The last change event of the element. */
  lastChange(name) {
    return this.events.filter((entry) => entry.element === name && entry.event === "change").at(-1)?.payload;
  },

  /**
   * Reveals a token as a merchant's page does: a session, its nonce sent to the merchant's server to
   * authorize, the token retrieved through the session, its number shown in a read-only text element
   * (mounted once, reused by later reveals). Keeps what the page held (`revealed`) for the tests to
   * look through, with how long creating, authorizing and retrieving took (ms).
   */
  async reveal(tokenId, member) {
    if (!this.elements.revealed) await this.mount("revealed", "text", { readOnly: true, copy: true, label: "Card number" });
    const started = performance.now();
    const session = await this.vault.sessions.create();
    const created = performance.now();
    await this.authorize(session.nonce);
    const authorized = performance.now();
    const token = await this.vault.tokens.retrieve(tokenId, { session });
    const retrieved = performance.now();
    await this.elements.revealed.setValue(member ? token.data[member] : token.data);
    const timings = { create: created - started, authorize: authorized - created, retrieve: retrieved - authorized };
    this.revealed = { session, token, timings };
    return this.revealed;
  },

  /** The merchant's server authorizes the nonce (for the token its test chose). */
  async authorize(nonce) {
    const authorized = await fetch("/authorize-session", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ nonce }),
    });
    if (!authorized.ok) throw new Error(`the merchant's server refused: ${authorized.status}`);
  },

  /**
   * Page script talking to an element's frame past elements.js, as an older elements.js or a hostile
   * script would: posts a `submit` of its own and resolves with the frame's `result`.
   */
  submitToFrame(name, operation, body) {
    const iframe = document.querySelector(`#${name} iframe`);
    const id = 1_000_000 + Math.floor(Math.random() * 1_000_000);
    return new Promise((answered) => {
      addEventListener("message", (event) => {
        if (event.source === iframe.contentWindow && event.data.type === "result" && event.data.id === id) answered(event.data);
      });
      iframe.contentWindow.postMessage({ type: "submit", id, operation, body, references: [] }, new URL(iframe.src).origin);
    });
  },

  /** What the request resolved to, or the problem it rejected with, as plain data. */
  async settle(request) {
    try {
      return { ok: true, body: await request };
    } catch (error) {
      return { ok: false, problem: { status: error.status, title: error.title, detail: error.detail, errors: error.errors } };
    }
  },
};

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
   * authorize, the token retrieved with the session key, its number shown in a read-only text element.
   * Keeps what the page held (`revealed`) for the tests to look through.
   */
  async reveal(tokenId, member) {
    const shown = this.vault.createElement("text", { readOnly: true, copy: true, label: "Card number" });
    const box = document.createElement("div");
    box.id = "revealed";
    document.body.append(box);
    this.elements.revealed = shown;
    await shown.mount(box);
    const session = await this.vault.sessions.create();
    const authorized = await fetch("/authorize-session", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ nonce: session.nonce }),
    });
    if (!authorized.ok) throw new Error(`the merchant's server refused: ${authorized.status}`);
    const token = await this.vault.tokens.retrieve(tokenId, { apiKey: session.sessionKey });
    await shown.setValue(member ? token.data[member] : token.data);
    this.revealed = { session, token };
    return this.revealed;
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

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

  /** What the request resolved to, or the problem it rejected with, as plain data. */
  async settle(request) {
    try {
      return { ok: true, body: await request };
    } catch (error) {
      return { ok: false, problem: { status: error.status, title: error.title, detail: error.detail, errors: error.errors } };
    }
  },
};

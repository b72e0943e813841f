// The demo checkout (/elements/demo/): a name and a card in the vault's frames, tokenized in one
// request. The page shows what its change events and the vault's answer tell it, which is all it gets.
// Then a session reveals the card's number in a read-only frame, once the curl it prints authorizes it.
// Or the card becomes a token intent, which the curl the page prints converts into a token with a private key.
const startForm = document.getElementById("start");
const checkoutForm = document.getElementById("checkout");
const state = document.getElementById("state");
const answer = document.getElementById("answer");
const reveal = document.getElementById("reveal");
const authorize = document.getElementById("authorize");
const retrieve = document.getElementById("retrieve");
const showProblem = (problem) =>
  JSON.stringify({ status: problem.status, title: problem.title, detail: problem.detail, errors: problem.errors }, null, 2);

startForm.addEventListener("submit", async (event) => {
  event.preventDefault();
  const vault = await window.TokenVaultElements.init(document.getElementById("public-key").value.trim());
  const style = {
    base: { color: "#1a1a1a", fontSize: "16px", "::placeholder": { color: "#8a8f98" } },
    invalid: { color: "#c0392b" },
  };
  const name = vault.createElement("text", { label: "Name on the card", placeholder: "Jane Doe", style });
  const card = vault.createElement("card", { placeholder: "Card number", style });
  startForm.hidden = true;
  checkoutForm.hidden = false;
  await Promise.all([name.mount("#name"), card.mount("#card")]);
  card.on("change", (change) => {
    const errors = change.errors.map(({ field, code }) => `${field}: ${code}`).join(", ");
    state.textContent = [
      `brand ${change.cardBrand}`,
      change.complete ? "complete" : "not complete",
      change.cardLast4 ? `BIN ${change.cardBin}, last four ${change.cardLast4}` : "",
      errors,
    ]
      .filter(Boolean)
      .join(" · ");
  });
  checkoutForm.addEventListener("submit", async (submitted) => {
    submitted.preventDefault();
    answer.hidden = false;
    try {
      const tokens = await vault.tokenize({ name, card: { type: "card", data: card } });
      answer.textContent = JSON.stringify(tokens, null, 2);
      startReveal(vault, tokens.card.id, style);
    } catch (problem) {
      answer.textContent = showProblem(problem);
    }
  });
  document.getElementById("intent").onclick = async () => {
    answer.hidden = false;
    try {
      const intent = await vault.tokenIntents.create({ type: "card", data: card });
      answer.textContent = `${JSON.stringify(intent, null, 2)}\n\nYour server converts it into a token, within a day:\n${curl(
        "private key with token:create",
        { token_intent_id: intent.id },
        "/tokens",
      )}`;
    } catch (problem) {
      answer.textContent = showProblem(problem);
    }
  };
});

/** The curl a merchant's server would send: its key stays on the server, so the page prints a placeholder. */
const curl = (key, body, path) =>
  `curl -H "SVC-API-KEY: <${key}>" -H "content-type: application/json" \\\n  -d '${JSON.stringify(body)}' ${location.origin}${path}`;

/** The reveal section, for the card token just created: a session, the curl that authorizes it, the number in a frame. */
let shown;
function startReveal(vault, tokenId, style) {
  reveal.hidden = false;
  let session;
  document.getElementById("create-session").onclick = async () => {
    authorize.hidden = false;
    try {
      session = await vault.sessions.create();
    } catch (problem) {
      authorize.textContent = showProblem(problem);
      return;
    }
    const rule = {
      priority: 1,
      conditions: [{ attribute: "id", operator: "equals", value: tokenId }],
      transform: "reveal",
      permissions: ["token:read"],
    };
    const backend = { priority: 1, container: "/", transform: "reveal", permissions: ["token:read", "session:authorize"] };
    retrieve.hidden = false;
    authorize.textContent = [
      `Nonce ${session.nonce}. Authorize it before ${session.expiresAt} (SVC is the local HEADER_PREFIX):`,
      curl("private key", { nonce: session.nonce, rules: [rule] }, "/sessions/authorize"),
      "",
      "No private key that may? Make one:",
      curl("bootstrap key", { name: "backend", type: "private", rules: [backend] }, "/applications"),
    ].join("\n");
  };
  retrieve.onclick = async () => {
    try {
      const token = await vault.tokens.retrieve(tokenId, { session });
      if (!shown) {
        document.getElementById("number").hidden = false;
        shown = vault.createElement("text", { readOnly: true, copy: true, label: "Card number", style });
        await shown.mount("#number");
      }
      await shown.setValue(token.data.number);
    } catch (problem) {
      authorize.textContent = showProblem(problem);
    }
  };
}

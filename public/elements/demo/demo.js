// The demo checkout (/elements/demo/): a name and a card in the vault's frames, tokenized in one
// request. The page shows what its change events and the vault's answer tell it, which is all it gets.
const startForm = document.getElementById("start");
const checkoutForm = document.getElementById("checkout");
const state = document.getElementById("state");
const answer = document.getElementById("answer");

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
    } catch (problem) {
      answer.textContent = JSON.stringify(
        { status: problem.status, title: problem.title, detail: problem.detail, errors: problem.errors },
        null,
        2,
      );
    }
  });
});

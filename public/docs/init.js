// The API reference page (/docs): Swagger UI over the vault's own OpenAPI document, whose header
// names already follow this deployment's HEADER_PREFIX. "Authorize" takes an API key (or the
// operator key), and "Try it out" sends requests to this vault. A pasted key is kept only while the
// page is open: persisted, it would sit in localStorage of the origin that serves the card frames.
window.addEventListener("load", () => {
  window.ui = window.SwaggerUIBundle({
    url: "/openapi.json",
    dom_id: "#reference",
    deepLinking: true,
    persistAuthorization: false,
    tryItOutEnabled: true,
    docExpansion: "none",
    defaultModelsExpandDepth: 0,
  });
});

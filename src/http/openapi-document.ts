/**
 * The OpenAPI document's opening: its guide and tags. Everything is written with the default header
 * prefix; the served document replaces it by the deployment's HEADER_PREFIX.
 */
export const DOCUMENTED_PREFIX = "SVC";

const GUIDE = `A vault for sensitive data: it keeps values as encrypted tokens, searches them without showing them, \
and sends their data to partners through proxies and reactors that put it in place on the way out.

### Authenticate
Send an application's API key in the \`SVC-API-KEY\` header of every request ("Authorize" keeps it for "Try it out"). \
The application's permissions and access rules decide what the key may do; \`GET /permissions\` lists the permissions. \
Tenants and their keys are the deployment operator's, under \`SVC-OPERATOR-KEY\`.

### Errors
Every failure answers an RFC 7807 problem, \`application/problem+json\`: \`{type, title, status, detail, errors?}\`, where \
\`errors\` maps each field at fault to its messages. A failure of \`/proxy\` inside the vault wraps the same problem in \
\`proxy_error\`, to tell it from the destination's reply. Every reply carries \`SVC-TRACE-ID\`: quote it when reporting a 5xx.

### Where to start
1. Create a token: \`POST /tokens\` with \`{"type": "card", "data": {...}}\` answers the new token with its \`id\`.
2. Search it: \`POST /tokens/search\` with \`{"query": "data:4242424242424242"}\`.
3. Send it through a proxy: \`POST /proxies\` with a \`destination_url\` answers the proxy's \`key\`; a request to \`/proxy\` \
with that key in \`SVC-PROXY-KEY\` and \`{{ <token id> }}\` in its body reaches the destination with the token's data in its place.`;

/** The document's opening: the guide, and the tags in the order a newcomer meets them. */
export const OPENAPI_OBJECT = {
  openapi: "3.1.0",
  info: { title: "Token vault", version: "1.0.0", description: GUIDE },
  tags: [
    { name: "Tokens", description: "Store sensitive values as tokens, read them back masked or revealed, search and detokenize them." },
    { name: "Proxies", description: "Pre-configured proxies: a destination, optional transforms and the key that invokes them." },
    {
      name: "Proxy invocation",
      description: "Send a request through a proxy: token references are replaced by their data on the way to the destination.",
    },
    { name: "Reactor formulas", description: "The code reactors run: the official formulas and the tenant's own." },
    { name: "Reactors", description: "A formula with its configuration, run on request with detokenized arguments." },
    { name: "Applications", description: "Applications, their API keys, permissions and access rules." },
    { name: "Webhooks", description: "Signed notifications of the tenant's events, sent to its URLs." },
    { name: "Audit log", description: "Who did what to which entity, in a hash chain that can be verified." },
    { name: "Operators", description: "The deployment operator's routes: tenants, their placement and their keys." },
  ],
};

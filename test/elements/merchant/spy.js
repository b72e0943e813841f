// The merchant page's own script turned against the elements, loaded before elements.js: it keeps
// everything it can see in `seen` (every message event, every fetch and XMLHttpRequest, whatever
// the frames' documents give it), so the tests can look for the typed values there.
window.seen = [];
const keep = (what, value) => {
  try {
    window.seen.push(`${what} ${typeof value === "string" ? value : JSON.stringify(value)}`);
  } catch {
    window.seen.push(`${what} (not serializable)`);
  }
};

addEventListener("message", (event) => keep(`message from ${event.origin}`, event.data), true);

const pageFetch = window.fetch;
window.fetch = function fetch(input, init) {
  keep("fetch", [String(input?.url ?? input), init?.body ?? null]);
  return pageFetch.call(this, input, init);
};
const open = XMLHttpRequest.prototype.open;
XMLHttpRequest.prototype.open = function openRequest(method, url, ...rest) {
  keep("XMLHttpRequest.open", [method, String(url)]);
  return open.call(this, method, url, ...rest);
};
const send = XMLHttpRequest.prototype.send;
XMLHttpRequest.prototype.send = function sendRequest(body) {
  keep("XMLHttpRequest.send", body ?? null);
  return send.call(this, body);
};

/** Tries every way into the frames' documents, and keeps the page's own DOM. */
window.readFrames = () => {
  const attempts = {
    contentDocument: (iframe) => iframe.contentDocument?.documentElement.outerHTML ?? null,
    "contentWindow.document": (iframe) => iframe.contentWindow.document.documentElement.outerHTML,
    "input values": (iframe) => [...iframe.contentWindow.document.querySelectorAll("input")].map((input) => input.value),
  };
  for (const iframe of document.querySelectorAll("iframe")) {
    for (const [way, read] of Object.entries(attempts)) {
      try {
        keep(way, read(iframe));
      } catch (error) {
        keep(`${way} refused`, error.name);
      }
    }
  }
  keep("page DOM", document.documentElement.outerHTML);
  return window.seen;
};

// tilebake render page: the shared worker that makes the page's requests to the render host (workers/render-host/).
// Requests arrive on the BroadcastChannel 'tilebake-net' (from the page and from MapLibre's tile worker,
// see net-client.mjs) and are answered on it; the page's pixel uploads come over its own port (below).
// Playwright attaches to the page and its dedicated workers with the DevTools Network domain on
// (Chromium then reports ~7 events per request, and the render worker thread parses each); it does not
// attach to shared workers, so requests made here cost no events.
const channel = new BroadcastChannel('tilebake-net');
const inflight = new Map();

/** Make request `q` and answer it with `send` (default: on the channel). */
async function handle(q, send = (reply) => channel.postMessage(reply)) {
  const controller = new AbortController();
  inflight.set(q.id, controller);
  let reply;
  try {
    // Nothing goes through the browser's HTTP cache: every answer comes from the server.
    const res = await fetch(q.url, { method: q.method || 'GET', body: q.body, headers: q.headers, signal: controller.signal, cache: 'no-store' });
    const body = await res.arrayBuffer();
    reply = res.ok
      ? { id: q.id, ok: true, status: res.status, body, cacheControl: res.headers.get('Cache-Control'), expires: res.headers.get('Expires') }
      : { id: q.id, ok: false, status: res.status, statusText: res.statusText, text: new TextDecoder().decode(body) };
  } catch (e) {
    reply = { id: q.id, ok: false, status: 0, statusText: String((e && e.message) || e) };
  } finally {
    inflight.delete(q.id);
  }
  send(reply);
}

channel.onmessage = (e) => {
  const q = e.data;
  if (q.abort) inflight.get(q.abort)?.abort();
  else if (q.url) void handle(q);
};

// The page's own port (net-client.mjs netPost): requests whose bodies are transferred to this worker
// alone, answered on the port. The page waits for 'ready' before its first request: a BroadcastChannel
// message sent before this worker listens would be lost.
onconnect = (e) => {
  const port = e.ports[0];
  port.onmessage = (m) => {
    if (m.data && m.data.url) void handle(m.data, (reply) => port.postMessage(reply));
  };
  port.postMessage('ready');
};

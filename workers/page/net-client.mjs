// tilebake render page: requests through the shared worker net-worker.js (see there why), for the page
// and, imported with importScriptInWorkers, for MapLibre's tile worker. URLs of the render host are
// given to MapLibre as `tilebake://host/path` (render.js transformRequest), which it hands to `netLoad`.
export const PROTOCOL = 'tilebake';

const channel = new BroadcastChannel('tilebake-net');
const prefix = `${Math.random().toString(36).slice(2)}-`;
let seq = 0;
const pending = new Map();
channel.onmessage = (e) => {
  const done = pending.get(e.data.id);
  if (done) {
    pending.delete(e.data.id);
    done(e.data);
  }
};

function abortError() {
  return new DOMException('The request was aborted', 'AbortError');
}

/** Send a request to the shared worker over the channel; resolves its answer ({ ok, status, body | text, … }). */
function netRequest(q, signal) {
  const id = prefix + ++seq;
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortError());
    // An aborted request is forgotten here at once (its late answer is ignored) and cancelled there.
    const onAbort = () => {
      pending.delete(id);
      channel.postMessage({ abort: id });
      reject(abortError());
    };
    pending.set(id, (answer) => {
      signal?.removeEventListener('abort', onAbort);
      resolve(answer);
    });
    signal?.addEventListener('abort', onAbort, { once: true });
    channel.postMessage({ ...q, id });
  });
}

/** The page's connection to the shared worker (connectNet), and its requests waiting for an answer. */
let port = null;
const portPending = new Map();

/**
 * Connect to the shared worker `worker` (net-worker.js, started by the page: Chromium has no
 * SharedWorker in MapLibre's tile worker); resolves once it listens, before which no request may be
 * sent. Its port queues the worker's messages until this listens.
 */
export function connectNet(worker) {
  return new Promise((resolve) => {
    worker.port.onmessage = (e) => {
      if (e.data === 'ready') {
        port = worker.port;
        resolve();
        return;
      }
      const done = portPending.get(e.data.id);
      if (done) {
        portPending.delete(e.data.id);
        done(e.data);
      }
    };
    worker.port.start();
  });
}

/**
 * POST `body` (an ArrayBuffer, transferred: the page no longer has it) to `url` through the shared
 * worker's port, after connectNet; resolves its answer as netRequest does. Large bodies (a metatile's
 * pixels) go this way rather than over the BroadcastChannel: every other context on the channel (the
 * tile worker) would get a copy. They were Blobs there, and a Blob's bytes stay in Chromium's blob
 * storage until every context that received it has collected it: the storage filled up after ~500 MB
 * (~125 metatiles of 1024 px) and every upload after that failed ("Failed to fetch").
 */
export function netPost(url, body) {
  if (!port) return Promise.reject(new Error('netPost before connectNet'));
  const id = prefix + ++seq;
  return new Promise((resolve) => {
    portPending.set(id, resolve);
    port.postMessage({ id, url, method: 'POST', body, headers: { 'Content-Type': 'application/octet-stream' } }, [body]);
  });
}

/** MapLibre addProtocol loader for `tilebake://` URLs: errors as MapLibre's own fetch reports them (AJAXError fields). */
export async function netLoad(params, abortController) {
  const url = `http${params.url.slice(PROTOCOL.length)}`;
  const r = await netRequest({ url, method: params.method, headers: params.type === 'json' ? { Accept: 'application/json' } : undefined }, abortController.signal);
  if (!r.ok) throw Object.assign(new Error(`AJAXError: ${r.statusText} (${r.status}): ${url}`), { status: r.status, statusText: r.statusText, url });
  const data = params.type === 'json' ? JSON.parse(new TextDecoder().decode(r.body)) : params.type === 'string' ? new TextDecoder().decode(r.body) : r.body;
  return { data, cacheControl: r.cacheControl, expires: r.expires };
}

if (typeof WorkerGlobalScope !== 'undefined' && self instanceof WorkerGlobalScope && typeof self.addProtocol === 'function') {
  self.addProtocol(PROTOCOL, netLoad);
}

// Anchorage's service worker, filled in by the server for one build (server/src/offline.rs).
//
// - The bundle of this build (`<base>/build/<id>/pkg/…`) is fetched at install and served from the
//   cache from then on: those addresses never change content.
// - Pages go to the network first. A chat page the server marks as saveable is kept (the
//   newest MAX_PAGES, per account: signing out, or another account's page, drops them) and
//   served when the network is down, marked `data-saved` so the app says so. Signing out, or
//   being sent to sign in, drops them. A conversation deleted here, or that the server no
//   longer shows at its address (deleted elsewhere), is dropped too: what was deleted does
//   not open offline.
// - Nothing else is touched: the API and event streams always go to the network.
"use strict";

const BUILD = "__BUILD__";
// The path the site lives under (`--public-url`'s; empty at the root): every address below
// starts with it.
const BASE = "__BASE__";
const SHELL = __SHELL__;
const SHELL_PREFIX = "anchorage-shell-";
const SHELL_CACHE = SHELL_PREFIX + BUILD;
const PAGES_PREFIX = "anchorage-pages-";
const MAX_PAGES = 20;
// Earlier builds whose bundle stays for saved pages that load it (the newest first); a saved
// page of an older build than these is dropped with its bundle.
const MAX_EARLIER_BUILDS = 3;
// On a saved page: the build whose bundle it loads.
const BUILD_HEADER = "x-anchorage-build";
const SAVE_HEADER = "x-anchorage-save";
const SIGN_OUT = BASE + "/api/auth/logout";
const DELETE = BASE + "__DELETE__";
const SIGN_IN_PAGE = BASE + "/login";
const HOME = BASE + "/";
const NEW_CHAT = BASE + "/new";
const SESSION_PAGES = BASE + "/s/";
const BUILDS = BASE + "/build/";

self.addEventListener("install", (event) => {
  event.waitUntil(
    caches
      .open(SHELL_CACHE)
      .then((cache) => cache.addAll(SHELL))
      .then(() => self.skipWaiting()),
  );
});

self.addEventListener("activate", (event) => {
  event.waitUntil(
    (async () => {
      await dropEarlierBuilds();
      await self.clients.claim();
    })(),
  );
});

self.addEventListener("fetch", (event) => {
  const request = event.request;
  const url = new URL(request.url);
  if (url.origin !== self.location.origin) {
    return;
  }
  if (request.method === "POST" && url.pathname === SIGN_OUT) {
    event.waitUntil(forgetPages(null));
    return;
  }
  if (request.method === "POST" && url.pathname === DELETE) {
    // Dropped whether or not the server then deletes it: a saved copy is only a copy (the
    // next visit saves it again).
    event.waitUntil(
      request
        .clone()
        .json()
        .then((body) => typeof body.session_id === "string" && forgetPage(SESSION_PAGES + body.session_id))
        .catch(() => {}),
    );
    return;
  }
  if (request.method !== "GET") {
    return;
  }
  if (url.pathname.startsWith(BUILDS)) {
    event.respondWith(bundleFile(request));
  } else if (request.mode === "navigate") {
    event.respondWith(page(event));
  }
});

async function bundleFile(request) {
  const hit = await caches.match(request);
  if (hit) {
    return hit;
  }
  const response = await fetch(request);
  if (response.ok && new URL(request.url).pathname.startsWith(`${BUILDS}${BUILD}/`)) {
    const cache = await caches.open(SHELL_CACHE);
    await cache.put(request, response.clone());
  }
  return response;
}

async function page(event) {
  const request = event.request;
  let response;
  try {
    response = await fetch(request);
  } catch (offline) {
    return (await saved(request)) || nothingSaved();
  }
  const owner = response.headers.get(SAVE_HEADER);
  if (response.ok && response.type === "basic" && owner) {
    event.waitUntil(save(owner, request.url, response.clone()));
  }
  // Nobody is signed in here any more (the sign-in page answered, or a chat page sent the
  // browser to it: expired, signed out elsewhere, a new password): nothing kept stays.
  const path = new URL(request.url).pathname;
  const toSignIn =
    (response.ok && path === SIGN_IN_PAGE) ||
    (response.type === "opaqueredirect" && (isHome(path) || path === NEW_CHAT || path.startsWith(SESSION_PAGES)));
  if (toSignIn) {
    event.waitUntil(forgetPages(null));
  }
  // A conversation the server no longer shows at its address (deleted, or not this
  // account's) is not kept there either.
  if (path.startsWith(SESSION_PAGES) && (response.status === 404 || (response.ok && !owner))) {
    event.waitUntil(forgetPage(path));
  }
  return response;
}

/// Whether `path` is the home page, which shows the newest conversation (under a path, with
/// or without its trailing slash).
function isHome(path) {
  return path === HOME || (BASE !== "" && path === BASE);
}

/// Drops the bundles of earlier builds but those still needed: the newest one (a page of it
/// may still be open and load its Markdown renderer) and those of saved pages, which open
/// offline with the scripts they were rendered for. At most MAX_EARLIER_BUILDS stay; saved
/// pages of the builds dropped go with them (never opened without their scripts).
async function dropEarlierBuilds() {
  // Cache names come back in the order they were made: the newest earlier build is last.
  const earlier = (await caches.keys()).filter(
    (name) => name.startsWith(SHELL_PREFIX) && name !== SHELL_CACHE,
  );
  const wanted = new Set(earlier.slice(-1));
  const pagesOf = new Map();
  for (const name of (await caches.keys()).filter((n) => n.startsWith(PAGES_PREFIX))) {
    const cache = await caches.open(name);
    for (const key of await cache.keys()) {
      const hit = await cache.match(key);
      const shell = SHELL_PREFIX + (hit?.headers.get(BUILD_HEADER) || BUILD);
      if (shell === SHELL_CACHE) continue;
      if (!pagesOf.has(shell)) pagesOf.set(shell, []);
      pagesOf.get(shell).push(() => cache.delete(key));
      wanted.add(shell);
    }
  }
  const kept = new Set(earlier.filter((name) => wanted.has(name)).slice(-MAX_EARLIER_BUILDS));
  await Promise.all(earlier.filter((name) => !kept.has(name)).map((name) => caches.delete(name)));
  for (const [shell, forget] of pagesOf) {
    if (!kept.has(shell)) await Promise.all(forget.map((f) => f()));
  }
}

/// Drops the saved copy of the page at `path`, whichever account kept it.
async function forgetPage(path) {
  const address = new URL(path, self.location.origin).href;
  const names = (await caches.keys()).filter((name) => name.startsWith(PAGES_PREFIX));
  await Promise.all(
    names.map(async (name) => (await caches.open(name)).delete(address, { ignoreSearch: true })),
  );
}

/// Drops every account's saved pages but `keep`'s.
async function forgetPages(keep) {
  const names = (await caches.keys()).filter(
    (name) => name.startsWith(PAGES_PREFIX) && name !== keep,
  );
  await Promise.all(names.map((name) => caches.delete(name)));
}

async function save(owner, address, response) {
  const name = PAGES_PREFIX + owner;
  await forgetPages(name);
  const cache = await caches.open(name);
  // Kept with the build whose bundle it loads (its `<meta>`), which then stays.
  const text = await response.text();
  const headers = new Headers(response.headers);
  headers.delete("content-encoding");
  headers.delete("content-length");
  const build = /<meta name="anchorage-build" content="([0-9a-f]+)"/.exec(text);
  if (build) headers.set(BUILD_HEADER, build[1]);
  // Taken out first so that it goes to the end: the oldest saved page is dropped first.
  await cache.delete(address);
  await cache.put(address, new Response(text, { status: response.status, headers }));
  const keys = await cache.keys();
  const extra = keys.slice(0, Math.max(0, keys.length - MAX_PAGES));
  await Promise.all(extra.map((key) => cache.delete(key)));
}

async function saved(request) {
  const names = (await caches.keys()).filter((name) => name.startsWith(PAGES_PREFIX));
  for (const name of names) {
    const cache = await caches.open(name);
    let hit = await cache.match(request.url, { ignoreSearch: true });
    if (!hit && isHome(new URL(request.url).pathname)) {
      // The newest conversation is what `/` shows: the one read last.
      const keys = await cache.keys();
      hit = keys.length ? await cache.match(keys[keys.length - 1]) : undefined;
    }
    if (hit) {
      return markSaved(hit);
    }
  }
  return undefined;
}

/// The saved page, marked so that the app knows it is not the server's answer of now.
async function markSaved(response) {
  const text = await response.text();
  const headers = new Headers(response.headers);
  headers.delete("content-encoding");
  headers.delete("content-length");
  return new Response(text.replace("<html ", '<html data-saved="" '), {
    status: 200,
    headers,
  });
}

function nothingSaved() {
  const css = SHELL.find((file) => file.endsWith(".css"));
  const style = css ? `<link rel="stylesheet" href="${css}">` : "";
  const html =
    '<!DOCTYPE html><html lang="en" data-saved=""><head><meta charset="utf-8">' +
    '<meta name="viewport" content="width=device-width, initial-scale=1">' +
    `<title>Offline · Anchorage</title>${style}</head><body>` +
    '<main class="not-found"><h1>Offline</h1>' +
    "<p>This page was not saved on this device. It opens when the network is back.</p>" +
    `<p><a href="${HOME}">Your saved conversations</a></p></main></body></html>`;
  return new Response(html, {
    status: 503,
    headers: {
      "content-type": "text/html; charset=utf-8",
      "content-security-policy":
        "default-src 'self'; script-src 'none'; base-uri 'none'; frame-ancestors 'none'",
    },
  });
}

// "Sign in with a passkey" on the sign-in page (server/src/auth.rs renders the button; the
// ceremony is server/src/routes/passkeys.rs). No name is asked: the browser offers this
// site's passkeys on this device, the one chosen says whose it is, and the server checks its
// answer and sets the sign-in cookie.
"use strict";
(() => {
  const button = document.getElementById("passkey-button");
  const problem = document.getElementById("passkey-problem");
  if (!button) return;
  // Addresses of the site, wherever it lives (`--public-url` with a path): this script is at
  // its root. Read now: the page names the running script only while it first runs.
  const script = document.currentScript.src;
  const site = (path) => new URL(path, script).pathname;
  const able =
    window.PublicKeyCredential &&
    typeof PublicKeyCredential.parseRequestOptionsFromJSON === "function";
  if (!able) {
    // No passkeys in this browser: the password form alone.
    button.hidden = true;
    return;
  }
  const say = (text) => {
    problem.textContent = text;
    problem.hidden = false;
  };
  const post = async (path, body) => {
    const res = await fetch(path, {
      method: "POST",
      headers: { "content-type": "application/json" },
      credentials: "same-origin",
      body: JSON.stringify(body),
    });
    const answer = await res.json().catch(() => ({}));
    if (!res.ok) throw new Error(answer.error || `the server answered ${res.status}`);
    return answer;
  };
  button.addEventListener("click", async () => {
    button.disabled = true;
    problem.hidden = true;
    try {
      const start = await post(site("api/auth/passkey/start"), {});
      const publicKey = PublicKeyCredential.parseRequestOptionsFromJSON(start.options.publicKey);
      const credential = await navigator.credentials.get({ publicKey });
      await post(site("api/auth/passkey/finish"), {
        ceremony: start.ceremony,
        credential: credential.toJSON(),
      });
      // Where the form would go: the server cleaned it (a path of this site only).
      const next = document.querySelector('input[name="next"]');
      location.assign(next && next.value.startsWith("/") ? next.value : site("./"));
    } catch (e) {
      say(
        e && e.name === "NotAllowedError"
          ? "No passkey was used (it was cancelled, or this device has none for this site)."
          : `Signing in with a passkey did not work: ${e.message}`,
      );
    } finally {
      button.disabled = false;
    }
  });
})();

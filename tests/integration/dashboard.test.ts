/**
 * The dashboard over HTTP, without a browser: pages need a session (302 to the login page with
 * `next`), every form refuses a request without a valid CSRF token or from another origin,
 * htmx requests get the partial and others the whole layout, assets come from our origin.
 */
import assert from "node:assert/strict";
import { startTestService } from "../helpers/service.ts";
import { dashboardClient, tokenIn } from "../helpers/dashboard-client.ts";
import { api, createMerchant, mailedCode } from "../helpers/accounts.ts";
import { startReceiver } from "../helpers/receiver.ts";
import { waitFor } from "../helpers/poll.ts";
import { M } from "../../src/http/messages.ts";
import { emit } from "../../src/modules/webhooks/webhooks.service.ts";

Deno.test("dashboard pages over HTTP", async (t) => {
  const receiver = startReceiver();
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const d = dashboardClient(svc);
  try {
    const m = await createMerchant(svc);

    await t.step("the service's root is the dashboard", async () => {
      const r = await fetch(`${svc.baseUrl}/`, { redirect: "manual" });
      await r.body?.cancel();
      assert.equal(r.status, 302);
      assert.equal(r.headers.get("location"), "/dashboard");
    });

    await t.step("page routes without a session redirect to the login page", async () => {
      const paths = [
        "/dashboard",
        "/dashboard/keys",
        "/dashboard/keys?tab=1",
        "/dashboard/wallet",
        "/dashboard/wallet/balances",
        "/dashboard/webhooks",
        "/dashboard/webhooks?status=undelivered",
        "/dashboard/webhooks/secret",
      ];
      for (const path of paths) {
        const r = await d.get(null, path);
        assert.equal(r.status, 302, path);
        assert.equal(
          r.headers.get("location"),
          `/dashboard/login?next=${encodeURIComponent(path)}`,
          path,
        );
      }
      // A garbage or foreign cookie is no session either.
      for (const cookie of ["merchant_token=nope", "consumer_token=x"]) {
        const r = await fetch(`${svc.baseUrl}/dashboard/keys`, {
          headers: { cookie },
          redirect: "manual",
        });
        await r.body?.cancel();
        assert.equal(r.status, 302);
        assert.match(r.headers.get("location")!, /^\/dashboard\/login\?next=/);
      }
      // htmx gets a redirect it can follow as a full page load, naming the page it was on.
      const hx = await d.get(null, "/dashboard/wallet/balances", {
        "hx-request": "true",
        "hx-current-url": `${svc.baseUrl}/dashboard/wallet`,
      });
      assert.equal(hx.status, 401);
      assert.equal(hx.headers.get("hx-redirect"), "/dashboard/login?next=%2Fdashboard%2Fwallet");
      // A form sent without a session (signed out in another tab, expired) goes to the login
      // page saying so, back to the page it was sent from when that is known.
      const b = await d.open();
      const p = await d.post(b, "/dashboard/keys", { type: "secret", environment: "test" });
      assert.equal(p.status, 302);
      assert.equal(p.headers.get("location"), "/dashboard/login?ended=1");
      const sent = await d.post(b, "/dashboard/keys", { type: "secret", environment: "test" }, {
        headers: { "hx-request": "true", "hx-current-url": `${svc.baseUrl}/dashboard/keys` },
      });
      assert.equal(sent.status, 401);
      assert.equal(
        sent.headers.get("hx-redirect"),
        "/dashboard/login?next=%2Fdashboard%2Fkeys&ended=1",
      );
      const login = await d.get(null, "/dashboard/login?next=%2Fdashboard%2Fkeys&ended=1");
      assert.ok(login.text.includes(M.sessionEnded));
    });

    await t.step(
      "an unverified login links to the code form with its email filled in",
      async () => {
        const email = `unverified${Date.now()}@shop.example`;
        const signup = await api(svc)("POST", "/api/merchant/signup", {
          body: { email, businessName: "Later", password: "a long enough password" },
        });
        assert.equal(signup.status, 201, signup.text);
        const b = await d.open();
        const r = await d.post(b, "/dashboard/login", {
          email,
          password: "a long enough password",
        });
        assert.equal(r.status, 403, r.text);
        assert.match(r.text, /Please verify your email before logging in\./);
        const href = `/dashboard/verify?email=${encodeURIComponent(email)}`;
        assert.ok(r.text.includes(`href="${href}"`), "the link carries the email");
        const form = await d.get(null, href);
        assert.equal(form.status, 200);
        assert.ok(form.text.includes(`value="${email}"`), "the code form has the email");
      },
    );

    await t.step("the login page keeps only a dashboard `next`", async () => {
      const ok = await d.get(
        null,
        "/dashboard/login?next=%2Fdashboard%2Fwebhooks%3Fstatus%3Dpending",
      );
      assert.equal(ok.status, 200);
      assert.match(ok.headers.get("content-type")!, /^text\/html/);
      assert.match(ok.text, /^<!DOCTYPE html>/);
      assert.match(
        ok.text,
        /<input type="hidden" name="next" value="\/dashboard\/webhooks\?status=pending"/,
      );
      for (
        const next of [
          "https://evil.example/",
          "//evil.example/dashboard",
          "/dashboard/../api/keys",
          "/dashboardx",
          "/\\evil.example",
          "/dashboard/login",
        ]
      ) {
        const r = await d.get(null, `/dashboard/login?next=${encodeURIComponent(next)}`);
        assert.equal(r.status, 200);
        assert.doesNotMatch(r.text, /name="next"/, next);
      }
      // Logging in with a foreign `next` lands on the dashboard instead.
      const b = await d.open();
      const r = await d.post(b, "/dashboard/login", {
        email: m.email,
        password: m.password,
        next: "//evil.example/x",
      });
      assert.equal(r.status, 303);
      assert.equal(r.headers.get("location"), "/dashboard");
      assert.ok(b.cookies.get("merchant_token"));
      const good = await d.post(await d.open(), "/dashboard/login", {
        email: m.email,
        password: m.password,
        next: "/dashboard/wallet",
      });
      assert.equal(good.headers.get("location"), "/dashboard/wallet");
      // Signed in, the login page sends you on.
      const again = await d.get(b, "/dashboard/login?next=%2Fdashboard%2Fwebhooks");
      assert.equal(again.status, 302);
      assert.equal(again.headers.get("location"), "/dashboard/webhooks");
    });

    await t.step("login errors are the API's texts, next to their fields", async () => {
      const b = await d.open();
      const bad = await d.post(b, "/dashboard/login", { email: m.email, password: "wrong one!" });
      assert.equal(bad.status, 401);
      assert.match(bad.text, fieldError("password", M.badLogin));
      assert.match(bad.text, new RegExp(`value="${escape(m.email)}"`), "the email is kept");
      const empty = await d.post(b, "/dashboard/login", { email: "", password: "" });
      assert.equal(empty.status, 400);
      assert.match(empty.text, fieldError("email", M.loginFields));
      assert.match(empty.text, fieldError("password", M.loginFields));
    });

    // Things the forms below act on.
    const signedIn = await d.open(m, "/dashboard/keys");
    const created = await d.post(signedIn, "/dashboard/keys", {
      type: "secret",
      environment: "test",
      label: "server",
    });
    assert.equal(created.status, 200, created.text);
    const secretKey = /value="(svc_sec_test_[0-9a-f]{48})"/.exec(created.text)?.[1];
    assert.ok(secretKey, "the new key is on the page");
    const keyId = /id="key-([0-9a-f-]{36})"[^>]*>\s*<td data-label="Key"><code>svc_sec_test_/.exec(
      created.text,
    )?.[1];
    assert.ok(keyId);
    const deliveryId = await svc.deps.sql.begin((tx) =>
      emit(svc.deps, tx, {
        merchantId: m.id,
        url: `${receiver.url}/hook`,
        event: "payment.settled",
        payload: { reference: "ref_1", amount: 1 },
      })
    );
    const secretBefore = await svc.deps.sql<{ webhookSecret: string }[]>`
      select webhook_secret from merchants where id = ${m.id}`;

    await t.step("every form refuses a request without a valid CSRF token", async () => {
      const other = await d.open(m, "/dashboard/keys"); // the same merchant, another browser
      const forms: [string, Record<string, string>][] = [
        ["/dashboard/logout", {}],
        ["/dashboard/mode", { mode: "test", back: "/dashboard/keys" }],
        ["/dashboard/keys", { type: "secret", environment: "live" }],
        [`/dashboard/keys/${keyId}/revoke`, {}],
        [`/dashboard/keys/${keyId}/rotate`, {}],
        ["/dashboard/wallet/managed", {}],
        ["/dashboard/wallet/challenge", { address: m.walletAddress ?? "" }],
        ["/dashboard/wallet/link", { address: "0x0", message: "m", signature: "0x" }],
        ["/dashboard/webhooks/secret/roll", {}],
        [`/dashboard/webhooks/deliveries/${deliveryId}/replay`, {}],
        ["/dashboard/login", { email: m.email, password: m.password }],
        ["/dashboard/signup", {
          email: "x@shop.example",
          businessName: "X",
          password: "long enough",
        }],
        ["/dashboard/verify", { email: m.email, code: "ABC123", password: m.password }],
      ];
      const attempts: [string, Parameters<typeof d.post>[3]][] = [
        ["no token", { token: null }],
        ["a wrong token", { token: "A".repeat(43) }],
        ["another browser's token", { token: other.token }],
        ["a token in the header from another browser", {
          token: null,
          headers: { "x-csrf-token": other.token },
        }],
        ["a valid token from another origin", { origin: "https://evil.example" }],
        ["a valid token with no Origin or Sec-Fetch-Site", { origin: null }],
        ["a valid token, Sec-Fetch-Site cross-site", {
          origin: null,
          headers: { "sec-fetch-site": "cross-site" },
        }],
      ];
      for (const [path, fields] of forms) {
        for (const [what, opts] of attempts) {
          const r = await d.post(signedIn, path, fields, opts);
          assert.equal(r.status, 403, `${path} with ${what}: ${r.status}`);
          assert.match(r.headers.get("content-type")!, /^text\/html/);
          assert.ok(r.text.includes(escape(M.dashCsrf)), `${path} with ${what}`);
        }
      }
      // An htmx request gets the refusal as a fragment.
      const hx = await d.post(signedIn, "/dashboard/keys", {}, {
        token: null,
        headers: { "hx-request": "true" },
      });
      assert.equal(hx.status, 403);
      assert.doesNotMatch(hx.text, /<html/);
      assert.ok(hx.text.includes(escape(M.dashCsrf)));

      // Nothing happened: the session lives, the key is active, the secret and delivery unchanged.
      const keys = await api(svc)("GET", "/api/keys", { cookie: m.cookie });
      assert.equal(keys.status, 200);
      const list = keys.json.keys as { id: string; status: string }[];
      assert.equal(list.length, 2, "no key was created");
      assert.equal(list.find((k) => k.id === keyId)?.status, "active");
      const secretAfter = await svc.deps.sql<{ webhookSecret: string }[]>`
        select webhook_secret from merchants where id = ${m.id}`;
      assert.equal(secretAfter[0].webhookSecret, secretBefore[0].webhookSecret);
      const w = await api(svc)("GET", "/api/merchant/wallet", { cookie: m.cookie });
      assert.equal((w.json.wallet as { walletAddress: string }).walletAddress, m.walletAddress);
      const still = await d.get(signedIn, "/dashboard/keys");
      assert.doesNotMatch(still.text, /id="test-banner"/, "the mode did not change");
    });

    await t.step("the same forms work with the page's token (header or field)", async () => {
      const viaHeader = await d.post(signedIn, `/dashboard/keys/${keyId}/revoke`, {}, {
        token: null,
        headers: { "x-csrf-token": signedIn.token, "hx-request": "true" },
      });
      assert.equal(viaHeader.status, 200, viaHeader.text);
      assert.ok(viaHeader.text.includes(M.keyRevoked));
      const auth = await api(svc)("GET", "/api/merchant/dashboard", {
        headers: { "x-api-key": secretKey },
      });
      assert.equal(auth.status, 404, "the revoked key no longer works");
      // Sec-Fetch-Site same-origin stands in for Origin.
      const roll = await d.post(signedIn, "/dashboard/webhooks/secret/roll", {}, {
        origin: null,
        headers: { "sec-fetch-site": "same-origin", "hx-request": "true" },
      });
      assert.equal(roll.status, 200);
      assert.ok(roll.text.includes(M.dashSecretRolled));
      assert.match(roll.text, /value="whsec_/);
      // The token of a session that logged out is refused by the next session.
      const b = await d.open();
      const login = await d.post(b, "/dashboard/login", { email: m.email, password: m.password });
      assert.equal(login.status, 303);
      const stale = await d.post(b, "/dashboard/keys", { type: "secret", environment: "test" });
      assert.equal(stale.status, 403, "the anonymous token does not pass once signed in");
      const page = await d.get(b, "/dashboard/keys");
      b.token = tokenIn(page.text);
      const out = await d.post(b, "/dashboard/logout");
      assert.equal(out.status, 303);
      assert.equal(out.headers.get("location"), "/dashboard/login?loggedOut=1");
      assert.ok(!b.cookies.has("merchant_token"), "the session cookie is cleared");
      const after = await d.get(b, "/dashboard/keys");
      assert.equal(after.status, 302, "the session is gone");
    });

    await t.step("a page is the whole layout, or the partial for htmx", async () => {
      const full = await d.get(signedIn, "/dashboard/keys");
      assert.equal(full.status, 200);
      assert.match(full.headers.get("content-type")!, /^text\/html/);
      assert.match(full.text, /^<!DOCTYPE html><html lang="en">/);
      assert.match(full.text, /<a class="skip-link" href="#main">Skip to content<\/a>/);
      assert.match(full.text, /<nav id="nav" class="sections" aria-label="Dashboard sections">/);
      assert.match(full.text, /<main id="main" tabindex="-1">/);
      assert.match(full.text, /<script src="\/assets\/htmx\.min\.js\?v=[0-9a-f]{16}" defer="">/);
      assert.match(full.text, /<h1 id="keys-title">API keys<\/h1>/);
      assert.match(full.text, /<a href="\/dashboard\/keys"[^>]*aria-current="page"/);
      assert.equal(full.headers.get("cache-control"), "no-store");
      assert.match(full.headers.get("content-security-policy")!, /script-src 'self'/);
      assert.equal(full.headers.get("x-frame-options"), "DENY");
      assert.match(full.headers.get("vary")!, /HX-Request/i);

      // Wallet and Wallets are one section; the old page sends the browser there.
      const moved = await d.get(signedIn, "/dashboard/wallet?done=linked");
      assert.equal(moved.status, 302);
      assert.equal(moved.headers.get("location"), "/dashboard/wallets?done=linked");
      const part = await d.get(signedIn, "/dashboard/wallets", { "hx-request": "true" });
      assert.equal(part.status, 200);
      assert.doesNotMatch(part.text, /<html|<main|<body|DOCTYPE/);
      assert.match(part.text, /^<title>Wallets · Settlement<\/title>/);
      assert.match(part.text, /<nav id="nav"[^>]*hx-swap-oob="true"/);
      assert.match(part.text, /<a href="\/dashboard\/wallets"[^>]*aria-current="page"/);
      assert.doesNotMatch(part.text, /<a href="\/dashboard\/wallet"/, "one nav entry");
      assert.match(part.text, /<h2 id="wallet-title">Payout wallet<\/h2>/);
      // The page carries its mode; a request from a tab left in the other mode (the session
      // switched in another tab) reloads that tab instead of swapping in this mode's data.
      assert.match(full.text, /hx-headers="[^"]*X-Dashboard-Mode&quot;:&quot;live/);
      const current = await d.get(signedIn, "/dashboard/wallets", {
        "hx-request": "true",
        "x-dashboard-mode": "live",
      });
      assert.equal(current.status, 200);
      const stale = await d.get(signedIn, "/dashboard/wallets", {
        "hx-request": "true",
        "x-dashboard-mode": "test",
      });
      assert.deepEqual([stale.status, stale.headers.get("hx-refresh"), stale.text], [
        204,
        "true",
        "",
      ]);

      // A history restore and a boosted request want the whole page.
      const extras: Record<string, string>[] = [
        { "hx-history-restore-request": "true" },
        { "hx-boosted": "true" },
      ];
      for (const extra of extras) {
        const r = await d.get(signedIn, "/dashboard/wallets", { "hx-request": "true", ...extra });
        assert.match(r.text, /^<!DOCTYPE html>/);
      }
      // Fragments smaller than a section.
      const balances = await d.get(signedIn, "/dashboard/wallet/balances", {
        "hx-request": "true",
      });
      assert.equal(balances.status, 200);
      assert.match(balances.text, /^<div id="balances">/);
      assert.match(balances.text, /0 USDC/);
      const secret = await d.get(signedIn, "/dashboard/webhooks/secret", { "hx-request": "true" });
      assert.match(secret.text, /^<div id="webhook-secret"/);
      assert.match(secret.text, /value="whsec_[A-Za-z0-9+/=]+"/);
      const hidden = await d.get(signedIn, "/dashboard/webhooks", { "hx-request": "true" });
      assert.doesNotMatch(hidden.text, /whsec_[A-Za-z0-9+/=]{8,}/, "the secret stays hidden");

      // An unknown dashboard page is a 404 page in the layout.
      const missing = await d.get(signedIn, "/dashboard/nope");
      assert.equal(missing.status, 404);
      assert.match(missing.text, /^<!DOCTYPE html>/);
      assert.ok(missing.text.includes(M.notFound));

      // The landing page is the Overview section.
      const root = await d.get(signedIn, "/dashboard");
      assert.equal(root.status, 200);
      assert.match(root.text, /<a href="\/dashboard"[^>]*aria-current="page"/);
    });

    await t.step("webhook deliveries, filtered, and a replay", async () => {
      await waitFor(async () => {
        const [row] = await svc.deps.sql<{ status: string }[]>`
          select status from webhook_deliveries where id = ${deliveryId}`;
        return row.status === "delivered";
      }, { what: "the first attempt" });
      const page = await d.get(signedIn, "/dashboard/webhooks?status=delivered");
      assert.match(page.text, new RegExp(`id="delivery-${deliveryId}" data-status="delivered"`));
      const none = await d.get(signedIn, "/dashboard/webhooks?status=undelivered");
      assert.ok(none.text.includes("No deliveries match."));
      const bad = await d.get(signedIn, "/dashboard/webhooks?status=lost");
      assert.equal(bad.status, 400);
      assert.ok(bad.text.includes(M.deliveriesQuery));
      const replayed = await d.post(
        signedIn,
        `/dashboard/webhooks/deliveries/${deliveryId}/replay`,
      );
      assert.equal(replayed.status, 200);
      assert.ok(replayed.text.includes(`${M.dashReplayed} ${deliveryId}: delivered`));
      assert.equal(receiver.received.length, 2);
      const missing = await d.post(signedIn, "/dashboard/webhooks/deliveries/msg_nope/replay");
      assert.equal(missing.status, 404);
      assert.ok(missing.text.includes(M.deliveryNotFound));
    });

    await t.step("signup and verification through the forms", async () => {
      const b = await d.open(undefined, "/dashboard/signup");
      const invalid = await d.post(b, "/dashboard/signup", {
        email: "nope",
        businessName: "",
        password: "short",
        walletProvider: "PAYPAL",
      });
      assert.equal(invalid.status, 400);
      assert.match(invalid.text, fieldError("email", M.signupEmail));
      assert.match(invalid.text, fieldError("businessName", M.signupBusinessName));
      assert.match(invalid.text, fieldError("password", M.signupPassword));
      assert.match(invalid.text, fieldError("walletProvider", M.signupWalletProvider));
      const taken = await d.post(b, "/dashboard/signup", {
        email: m.email,
        businessName: "Again",
        password: "long enough",
      });
      assert.equal(taken.status, 409);
      assert.match(taken.text, fieldError("email", M.emailTaken));

      const email = `form${Date.now()}@shop.example`;
      const password = "a long enough password";
      const signup = await d.post(b, "/dashboard/signup", {
        email,
        businessName: "Form Shop",
        password,
        walletProvider: "LINK_WALLET",
      }, { headers: { "hx-request": "true" } });
      assert.equal(signup.status, 200, signup.text);
      assert.equal(signup.headers.get("hx-push-url"), "/dashboard/verify");
      assert.ok(signup.text.includes(M.codeSent));
      assert.match(signup.text, new RegExp(`name="email" type="email" value="${escape(email)}"`));
      const code = await mailedCode(svc, email);
      const wrong = await d.post(b, "/dashboard/verify", { email, code: "ZZZZZ9", password });
      assert.equal(wrong.status, 400);
      assert.match(wrong.text, fieldError("code", M.invalidCode));
      const unknown = await d.post(b, "/dashboard/verify", {
        email: "who@x.example",
        code,
        password,
      });
      assert.equal(unknown.status, 404);
      assert.match(unknown.text, fieldError("email", M.noAccount));
      const ok = await d.post(b, "/dashboard/verify", { email, code, password });
      assert.equal(ok.status, 200, ok.text);
      const key = /value="(svc_live_[0-9a-f]{48})"/.exec(ok.text)?.[1];
      assert.ok(key, "the merchant key is shown");
      assert.ok(ok.text.includes(escape(M.keyWarning)));
      assert.ok(b.cookies.get("merchant_token"), "verification signs the merchant in");
      const wallet = await d.get(b, "/dashboard/wallets");
      assert.equal(wallet.status, 200);
      assert.ok(wallet.text.includes("No payout wallet yet."), "LINK_WALLET starts with none");
      assert.ok(!wallet.text.includes(key), "the key is not shown again");
      const again = await d.post(b, "/dashboard/verify", { email, code, password }, {
        token: tokenIn(wallet.text),
      });
      assert.equal(again.status, 409);
      assert.match(again.text, fieldError("email", M.alreadyVerified));
    });

    await t.step("assets come from our origin with long cache headers", async () => {
      const htmx = await fetch(`${svc.baseUrl}/assets/htmx.min.js`);
      const body = new Uint8Array(await htmx.arrayBuffer());
      assert.equal(htmx.status, 200);
      assert.match(htmx.headers.get("content-type")!, /^text\/javascript/);
      assert.equal(htmx.headers.get("cache-control"), "public, max-age=31536000, immutable");
      const file = await Deno.readFile(
        new URL("../../node_modules/htmx.org/dist/htmx.min.js", import.meta.url),
      );
      assert.equal(body.length, file.length);
      const etag = htmx.headers.get("etag")!;
      const again = await fetch(`${svc.baseUrl}/assets/htmx.min.js`, {
        headers: { "if-none-match": etag },
      });
      await again.body?.cancel();
      assert.equal(again.status, 304);

      const page = await d.get(signedIn, "/dashboard/keys");
      const css = /href="(\/assets\/dashboard\.css\?v=[0-9a-f]{16})"/.exec(page.text)![1];
      const versioned = await fetch(`${svc.baseUrl}${css}`);
      assert.equal(versioned.status, 200);
      assert.match(versioned.headers.get("content-type")!, /^text\/css/);
      assert.match(await versioned.text(), /\.htmx-indicator/);
      assert.match(versioned.headers.get("cache-control")!, /immutable/);
      const plain = await fetch(`${svc.baseUrl}/assets/dashboard.css`);
      await plain.body?.cancel();
      assert.equal(plain.headers.get("cache-control"), "no-cache", "unversioned: revalidate");
      for (const bad of ["nope.js", "..%2Fdeno.json", "%2E%2E%2Flayout.tsx", ".hidden.js"]) {
        const r = await fetch(`${svc.baseUrl}/assets/${bad}`);
        await r.body?.cancel();
        assert.equal(r.status, 404, bad);
      }
    });
  } finally {
    await svc.close();
    await receiver.close();
  }
});

function escape(s: string): string {
  return s.replaceAll("&", "&amp;").replaceAll('"', "&quot;").replaceAll("'", "&#39;")
    .replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}

/** The inline error paragraph right after the field's input. */
function fieldError(field: string, text: string): RegExp {
  const t = escape(text).replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`<p class="field-error" id="f-${field}-error">${t}</p>`);
}

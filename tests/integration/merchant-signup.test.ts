/**
 * Merchant lifecycle against a real SMTP server: the code arrives, works once, expires after
 * 10 minutes, dies after 5 wrong tries, is replaced by a new signup; login sessions and logout.
 */
import assert from "node:assert/strict";
import { startTestService, type TestService } from "../helpers/service.ts";
import { startSmtp, type TestSmtp } from "../helpers/smtp.ts";
import { api, cookieFrom } from "../helpers/accounts.ts";
import { stampede } from "../helpers/stampede.ts";
import { SignJWT } from "jose";

const codeFor = (smtp: TestSmtp, to: string, nth: number) => smtp.codeFor(to, nth);

Deno.test("merchant signup and verification through a real SMTP server", async (t) => {
  const smtp = await startSmtp();
  const svc: TestService = await startTestService({
    env: { SMTP_URL: smtp.url, RATE_LIMITS: "off" },
  });
  const call = api(svc);
  const email = "owner@shop.example";
  const password = "a long enough password";
  try {
    await t.step("signup validates its fields and writes nothing on bad input", async () => {
      for (
        const [body, error] of [
          [{ email: "nope", businessName: "S", password }, "A valid email is required."],
          [
            { email, businessName: "", password },
            "businessName is required (1 to 120 characters).",
          ],
          [
            { email, businessName: "S", password: "short" },
            "Password must be 8 to 200 characters.",
          ],
          [
            { email, businessName: "S", password, walletProvider: "PAYPAL" },
            "walletProvider must be one of: MANAGED, EXTENSION_WALLET, LINK_WALLET, HOSTED_WALLET",
          ],
        ] as const
      ) {
        const r = await call("POST", "/api/merchant/signup", { body });
        assert.equal(r.status, 400);
        assert.deepEqual(r.json, { success: false, error });
      }
      const rows = await svc.db.sql`select 1 from merchants`;
      assert.equal(rows.length, 0);
    });

    await t.step(
      "the emailed code arrives and verification issues the merchant key once",
      async () => {
        const r = await call("POST", "/api/merchant/signup", {
          body: { email: "Owner@Shop.Example", businessName: "The Shop", password },
        });
        assert.equal(r.status, 201);
        assert.equal(r.json.email, email);
        const code = await codeFor(smtp, email, 0);
        assert.match(code, /^[A-Z0-9]{6}$/);
        const mail = smtp.inbox[0].raw;
        assert.match(mail, /Subject: Verify your email/);
        assert.ok(!mail.split(/\r?\n\r?\n/)[0].includes(code), "the code is not in any header");

        const wrong = await call("POST", "/api/merchant/verify", {
          body: { email, code: "ZZZZZ9" },
        });
        assert.deepEqual([wrong.status, wrong.json.error], [400, "Invalid verification code."]);

        const ok = await call("POST", "/api/merchant/verify", {
          body: { email, code: code.toLowerCase() },
        });
        assert.equal(ok.status, 200, ok.text);
        assert.equal(ok.json.message, "Account verified successfully.");
        assert.match(ok.json.apiKey as string, /^svc_live_[0-9a-f]{48}$/);
        assert.ok(String(ok.json.warning).length > 10);
        const merchant = ok.json.merchant as Record<string, unknown>;
        assert.deepEqual(Object.keys(merchant).sort(), [
          "businessName",
          "createdAt",
          "email",
          "id",
          "walletAddress",
          "walletProvider",
        ]);
        assert.equal(merchant.walletProvider, "MANAGED");
        assert.match(String(merchant.walletAddress), /^0x[0-9a-fA-F]{40}$/);
        // The raw key is nowhere in the database.
        const keys = await svc.db.sql`select * from api_keys`;
        assert.equal(keys.length, 1);
        assert.ok(!JSON.stringify(keys).includes(ok.json.apiKey as string));

        const again = await call("POST", "/api/merchant/verify", { body: { email, code } });
        assert.deepEqual([again.status, again.json.error], [
          409,
          "This account is already verified.",
        ]);
        const dup = await call("POST", "/api/merchant/signup", {
          body: { email, businessName: "X", password },
        });
        assert.deepEqual([dup.status, dup.json.error], [
          409,
          "An account with this email already exists.",
        ]);
      },
    );

    await t.step("unknown email", async () => {
      const r = await call("POST", "/api/merchant/verify", {
        body: { email: "who@x.example", code: "ABC123" },
      });
      assert.deepEqual([r.status, r.json.error], [404, "No account found for this email."]);
    });

    await t.step("a code expires after 10 minutes", async () => {
      const e = "late@shop.example";
      await call("POST", "/api/merchant/signup", {
        body: { email: e, businessName: "Late", password },
      });
      const code = await codeFor(smtp, e, 0);
      svc.clock.advance(10 * 60 * 1000 + 1);
      const r = await call("POST", "/api/merchant/verify", { body: { email: e, code } });
      assert.deepEqual([r.status, r.json.error], [
        400,
        "Verification code has expired. Please sign up again to get a new one.",
      ]);
      // Signing up again sends a new code that works.
      await call("POST", "/api/merchant/signup", {
        body: { email: e, businessName: "Late", password },
      });
      const fresh = await codeFor(smtp, e, 1);
      const ok = await call("POST", "/api/merchant/verify", { body: { email: e, code: fresh } });
      assert.equal(ok.status, 200);
    });

    await t.step("five wrong codes kill the code; a new signup replaces it", async () => {
      const e = "guess@shop.example";
      await call("POST", "/api/merchant/signup", {
        body: { email: e, businessName: "G", password },
      });
      const code = await codeFor(smtp, e, 0);
      const wrongCode = code === "AAAAAA" ? "BBBBBB" : "AAAAAA";
      for (let i = 1; i <= 5; i++) {
        const r = await call("POST", "/api/merchant/verify", {
          body: { email: e, code: wrongCode },
        });
        assert.equal(r.status, 400);
        assert.equal(
          r.json.error,
          i < 5
            ? "Invalid verification code."
            : "Too many incorrect codes. Please sign up again to get a new one.",
        );
      }
      const dead = await call("POST", "/api/merchant/verify", { body: { email: e, code } });
      assert.deepEqual([dead.status, dead.json.error], [
        400,
        "Too many incorrect codes. Please sign up again to get a new one.",
      ]);
      await call("POST", "/api/merchant/signup", {
        body: { email: e, businessName: "G", password },
      });
      const fresh = await codeFor(smtp, e, 1);
      const stale = await call("POST", "/api/merchant/verify", { body: { email: e, code } });
      if (code !== fresh) assert.equal(stale.json.error, "Invalid verification code.");
      const ok = await call("POST", "/api/merchant/verify", { body: { email: e, code: fresh } });
      assert.equal(ok.status, 200, ok.text);
    });

    await t.step(
      "login sets a 7-day HttpOnly SameSite=Lax cookie; logout ends that session",
      async () => {
        const bad = await call("POST", "/api/merchant/login", {
          body: { email, password: "wrong password" },
        });
        assert.deepEqual([bad.status, bad.json.error], [401, "Invalid email or password."]);
        const r = await call("POST", "/api/merchant/login", { body: { email, password } });
        assert.equal(r.status, 200);
        const setCookie = r.headers.getSetCookie().find((c) => c.startsWith("merchant_token="))!;
        assert.match(setCookie, /HttpOnly/);
        assert.match(setCookie, /SameSite=Lax/);
        assert.match(setCookie, /Max-Age=604800/);
        assert.match(setCookie, /Secure/, "Secure outside development");
        const cookie = cookieFrom(r.headers, "merchant_token")!;
        const me = await call("GET", "/api/merchant/me", { cookie });
        assert.equal(me.status, 200);
        assert.match(
          String((me.json.merchant as { apiKeyHint: string }).apiKeyHint),
          /^svc_live_[0-9a-f]{7}\.\.\.$/,
        );
        assert.deepEqual(me.json.stats, {
          totalPayments: 0,
          successfulPayments: 0,
          totalVolume: 0,
          successRate: 0,
        });
        assert.deepEqual(me.json.recentPayments, []);

        const out = await call("DELETE", "/api/merchant/me", { cookie });
        assert.equal(out.status, 200);
        assert.ok(
          out.headers.getSetCookie().some((c) =>
            /^merchant_token=;/.test(c) || /Max-Age=0/.test(c)
          ),
        );
        const after = await call("GET", "/api/merchant/me", { cookie });
        assert.deepEqual([after.status, after.json.error], [401, "Invalid session."]);
      },
    );

    await t.step(
      "a session expires after 7 days; tokens with other algorithms are refused",
      async () => {
        const r = await call("POST", "/api/merchant/login", { body: { email, password } });
        const cookie = cookieFrom(r.headers, "merchant_token")!;
        const claims = JSON.parse(
          atob(cookie.split("=")[1].split(".")[1].replace(/-/g, "+").replace(/_/g, "/")),
        );
        // Same claims, alg "none": refused.
        const none = `${btoa(JSON.stringify({ alg: "none", typ: "JWT" })).replace(/=+$/, "")}.${
          cookie.split("=")[1].split(".")[1]
        }.`;
        const r1 = await call("GET", "/api/merchant/me", { cookie: `merchant_token=${none}` });
        assert.equal(r1.status, 401);
        // Same claims signed with the right secret but HS512: refused (algorithm pinned).
        const hs512 = await new SignJWT(claims).setProtectedHeader({ alg: "HS512" }).sign(
          new TextEncoder().encode(svc.deps.config.JWT_SECRET!),
        );
        const r2 = await call("GET", "/api/merchant/me", { cookie: `merchant_token=${hs512}` });
        assert.equal(r2.status, 401);
        svc.clock.advance(7 * 24 * 3600 * 1000 + 1000);
        const r3 = await call("GET", "/api/merchant/me", { cookie });
        assert.deepEqual([r3.status, r3.json.error], [401, "Invalid session."]);
      },
    );

    await t.step(
      "passwords are bounded: 8 to 200 at signup; longer at login is a wrong password",
      async () => {
        const long = await call("POST", "/api/merchant/signup", {
          body: { email: "long@shop.example", businessName: "L", password: "x".repeat(201) },
        });
        assert.deepEqual([long.status, long.json.error], [
          400,
          "Password must be 8 to 200 characters.",
        ]);
        // Never accepted at signup, so no account can match: 401 as for any wrong password, and
        // the same for an unknown email, so the bound says nothing about which accounts exist.
        for (const e of [email, "nobody@shop.example"]) {
          for (const pw of ["y".repeat(201), "z".repeat(100_000)]) {
            const r = await call("POST", "/api/merchant/login", {
              body: { email: e, password: pw },
            });
            assert.deepEqual([r.status, r.json.success, r.json.error], [
              401,
              false,
              "Invalid email or password.",
            ]);
          }
        }
        const longEmail = await call("POST", "/api/merchant/login", {
          body: { email: `${"a".repeat(100_000)}@shop.example`, password },
        });
        assert.deepEqual([longEmail.status, longEmail.json.error], [
          401,
          "Invalid email or password.",
        ]);
        // Absent or not a string is still a missing field.
        for (const body of [{ email }, { email, password: "" }, { email, password: 12345678 }]) {
          const r = await call("POST", "/api/merchant/login", { body });
          assert.deepEqual([r.status, r.json.error], [400, "email and password are required."]);
        }
        const ok = await call("POST", "/api/merchant/login", { body: { email, password } });
        assert.equal(ok.status, 200, ok.text);
      },
    );

    await t.step("an unverified account cannot log in", async () => {
      const e = "pending@shop.example";
      await call("POST", "/api/merchant/signup", {
        body: { email: e, businessName: "P", password },
      });
      const r = await call("POST", "/api/merchant/login", { body: { email: e, password } });
      assert.deepEqual([r.status, r.json.error], [
        403,
        "Please verify your email before logging in.",
      ]);
    });

    await t.step("wallet provisioning failure → 500 and the account stays unverified", async () => {
      const e = "nowallet@shop.example";
      await call("POST", "/api/merchant/signup", {
        body: { email: e, businessName: "N", password },
      });
      const code = await codeFor(smtp, e, 0);
      // A new managed wallet no longer touches the chain (gas comes when it first sends, issue
      // 12), so stopping the nodes cannot fail it any more: the keystore's insert fails instead.
      await svc.db.sql.unsafe(`
        create function refuse_wallet() returns trigger language plpgsql as
          $$ begin raise exception 'wallet store unavailable'; end $$;
        create trigger refuse_wallet before insert on wallets
          for each row execute function refuse_wallet();`);
      const r = await call("POST", "/api/merchant/verify", { body: { email: e, code } });
      assert.deepEqual([r.status, r.json.error], [
        500,
        "Verification succeeded but wallet setup failed. Please contact support.",
      ]);
      const [row] = await svc.db.sql`select verified_at from merchants where email = ${e}`;
      assert.equal(row.verifiedAt, null);
      const keys = await svc.db
        .sql`select 1 from api_keys k join merchants m on m.id = k.merchant_id where m.email = ${e}`;
      assert.equal(keys.length, 0);
    });
  } finally {
    await svc.close();
    await smtp.close();
  }
});

/**
 * A repeat signup must not take over an unverified registration whose code is live (defect:
 * anyone could set the password of an address before its owner verified it, and mail-bomb it).
 * Mail is counted as the `mail.send` jobs the signups enqueued, in their own transactions, so
 * the count is final when the answers are in; codes are read from those jobs.
 */
Deno.test("a repeat signup never replaces a registration whose code is live", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const call = api(svc);
  const mails = async (to: string) =>
    (await svc.db.sql<{ text: string }[]>`
      select data->>'text' as text from pgboss.job where name = 'mail.send' and data->>'to' = ${to}
      order by created_on, id`).map((m) => m.text);
  const codeIn = (text: string) => /code is ([A-Z0-9]{6})\./.exec(text)![1];
  const row = async (email: string) =>
    (await svc.db.sql<
      { businessName: string; passwordHash: string; walletProvider: string; codeHash: string }[]
    >`
      select business_name, password_hash, wallet_provider, verification_code_hash as code_hash
      from merchants where email = ${email}`)[0];
  const taken = [409, "An account with this email already exists."];
  const login = async (email: string, password: string) =>
    (await call("POST", "/api/merchant/login", { body: { email, password } })).status;
  try {
    await t.step("the hijack: a second signup is refused and changes nothing", async () => {
      const email = "d2@shop.example";
      const owner = "a long password";
      const first = await call("POST", "/api/merchant/signup", {
        body: { email, businessName: "D", password: owner },
      });
      assert.equal(first.status, 201, first.text);
      const before = await row(email);
      const attack = await call("POST", "/api/merchant/signup", {
        body: {
          email: "D2@Shop.Example",
          businessName: "D-renamed",
          password: "another password",
          walletProvider: "LINK_WALLET",
        },
      });
      assert.deepEqual([attack.status, attack.json.success, attack.json.error], [
        409,
        false,
        taken[1],
      ]);
      assert.deepEqual(await row(email), before, "password, name, provider and code unchanged");
      const sent = await mails(email);
      assert.equal(sent.length, 1, "no second mail");
      assert.match(sent[0], /If you did not sign up, ignore this message\./);

      const ok = await call("POST", "/api/merchant/verify", {
        body: { email, code: codeIn(sent[0]) },
      });
      assert.equal(ok.status, 200, ok.text);
      const m = ok.json.merchant as { businessName: string; walletProvider: string };
      assert.deepEqual([m.businessName, m.walletProvider], ["D", "MANAGED"]);
      assert.equal(await login(email, owner), 200);
      assert.equal(await login(email, "another password"), 401);
    });

    await t.step(
      "30 concurrent signups for one new email: one 201, one mail, 29 × 409",
      async () => {
        const email = "crowd@shop.example";
        const r = await stampede(svc, (i) => ({
          method: "POST",
          path: "/api/merchant/signup",
          body: { email, businessName: `Crowd ${i}`, password: `password number ${i}` },
        }), { copies: 30 });
        assert.deepEqual(r.byStatus, { 201: 1, 409: 29 });
        for (const a of r.answers.filter((a) => a.status === 409)) {
          assert.equal(a.json.error, taken[1]);
        }
        const sent = await mails(email);
        assert.equal(sent.length, 1, "one mail");
        // The one registration is the winner's, whole: its name, its password, its code.
        const winner = Number(/^Hello Crowd (\d+),/.exec(sent[0])![1]);
        assert.equal((await row(email)).businessName, `Crowd ${winner}`);
        const ok = await call("POST", "/api/merchant/verify", {
          body: { email, code: codeIn(sent[0]) },
        });
        assert.equal(ok.status, 200, ok.text);
        assert.equal(
          (ok.json.merchant as { businessName: string }).businessName,
          `Crowd ${winner}`,
        );
        assert.equal(await login(email, `password number ${winner}`), 200);
      },
    );

    await t.step("once the code has expired, a new signup replaces the registration", async () => {
      const email = "squat@shop.example";
      const first = await call("POST", "/api/merchant/signup", {
        body: { email, businessName: "Squatter", password: "squatter password" },
      });
      assert.equal(first.status, 201, first.text);
      // At exactly 10 minutes the code still verifies, so it is still refused.
      svc.clock.advance(10 * 60 * 1000);
      const still = await call("POST", "/api/merchant/signup", {
        body: { email, businessName: "Owner", password: "owner password" },
      });
      assert.deepEqual([still.status, still.json.error], taken);
      assert.equal((await mails(email)).length, 1);
      svc.clock.advance(1);
      const again = await call("POST", "/api/merchant/signup", {
        body: {
          email,
          businessName: "Owner",
          password: "owner password",
          walletProvider: "LINK_WALLET",
        },
      });
      assert.equal(again.status, 201, again.text);
      const sent = await mails(email);
      assert.equal(sent.length, 2);
      const [old, fresh] = sent.map(codeIn);
      if (old !== fresh) {
        const stale = await call("POST", "/api/merchant/verify", { body: { email, code: old } });
        assert.deepEqual([stale.status, stale.json.error], [400, "Invalid verification code."]);
      }
      const ok = await call("POST", "/api/merchant/verify", { body: { email, code: fresh } });
      assert.equal(ok.status, 200, ok.text);
      const m = ok.json.merchant as { businessName: string; walletProvider: string };
      assert.deepEqual([m.businessName, m.walletProvider], ["Owner", "LINK_WALLET"]);
      assert.equal(await login(email, "owner password"), 200);
      assert.equal(await login(email, "squatter password"), 401);
    });

    await t.step(
      "a code killed by wrong tries: only its own password signs up again before it expires",
      async () => {
        const email = "tries@shop.example";
        await call("POST", "/api/merchant/signup", {
          body: { email, businessName: "T", password: "first password" },
        });
        const code = codeIn((await mails(email))[0]);
        const wrongCode = code === "AAAAAA" ? "BBBBBB" : "AAAAAA";
        const wrong = () =>
          call("POST", "/api/merchant/verify", { body: { email, code: wrongCode } });
        for (let i = 0; i < 4; i++) assert.equal((await wrong()).status, 400);
        const refused = await call("POST", "/api/merchant/signup", {
          body: { email, businessName: "T2", password: "second password" },
        });
        assert.deepEqual([refused.status, refused.json.error], taken);
        assert.equal((await wrong()).status, 400);
        const before = await row(email);
        // The takeover an outside audit showed: a stranger kills the owner's code with five
        // wrong guesses, then signs up with a password of theirs; the owner, mailed a fresh
        // code, would verify the stranger's registration. Refused, and nothing changes.
        const stranger = await call("POST", "/api/merchant/signup", {
          body: {
            email,
            businessName: "Stranger",
            password: "attacker password 9",
            walletProvider: "EXTENSION_WALLET",
          },
        });
        assert.deepEqual([stranger.status, stranger.json.error], taken);
        assert.deepEqual(await row(email), before);
        assert.equal((await mails(email)).length, 1, "no mail for the stranger's signup");
        // The owner (its password) gets a new code, which verifies the owner's registration.
        const again = await call("POST", "/api/merchant/signup", {
          body: { email, businessName: "T", password: "first password" },
        });
        assert.equal(again.status, 201, again.text);
        const ok = await call("POST", "/api/merchant/verify", {
          body: { email, code: codeIn((await mails(email))[1]) },
        });
        assert.equal(ok.status, 200, ok.text);
        assert.equal(await login(email, "first password"), 200);
        assert.equal(await login(email, "attacker password 9"), 401);
      },
    );

    await t.step(
      "a killed code's registration is anyone's once the code would have expired",
      async () => {
        const email = "killed-late@shop.example";
        await call("POST", "/api/merchant/signup", {
          body: { email, businessName: "K", password: "first password" },
        });
        const code = codeIn((await mails(email))[0]);
        const wrongCode = code === "AAAAAA" ? "BBBBBB" : "AAAAAA";
        for (let i = 0; i < 5; i++) {
          await call("POST", "/api/merchant/verify", { body: { email, code: wrongCode } });
        }
        svc.clock.advance(10 * 60 * 1000);
        const early = await call("POST", "/api/merchant/signup", {
          body: { email, businessName: "K2", password: "second password" },
        });
        assert.deepEqual([early.status, early.json.error], taken);
        svc.clock.advance(1);
        const replaced = await call("POST", "/api/merchant/signup", {
          body: { email, businessName: "K2", password: "second password" },
        });
        assert.equal(replaced.status, 201, replaced.text);
        const ok = await call("POST", "/api/merchant/verify", {
          body: { email, code: codeIn((await mails(email))[1]) },
        });
        assert.equal(ok.status, 200, ok.text);
        assert.equal(await login(email, "second password"), 200);
      },
    );
  } finally {
    await svc.close();
  }
});

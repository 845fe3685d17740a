/**
 * Failed logins are limited per email address, not only per client address: an outside audit
 * made 300 wrong guesses for one account from three addresses, then logged in with the right one.
 */
import assert from "node:assert/strict";
import { startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { stampede } from "../helpers/stampede.ts";
import {
  LOGIN_FAILURE_WINDOW_MS,
  LOGIN_FAILURES_MAX,
} from "../../src/modules/merchants/merchants.login-throttle.ts";

const throttled = [429, "Rate limit exceeded. Please retry after 30 seconds."];

Deno.test("failed logins are limited per email address, whatever the client's address", async (t) => {
  const svc = await startTestService({
    // The per-address limit out of the way: each guess below comes from another address.
    env: { RATE_LIMIT_ANONYMOUS_PER_MINUTE: "100000", TRUST_PROXY: "true" },
  });
  const call = api(svc);
  let n = 0;
  const login = (email: string, password: string) =>
    call("POST", "/api/merchant/login", {
      body: { email, password },
      headers: { "x-forwarded-for": `198.51.100.${n++ % 250}` },
    });
  try {
    const m = await createMerchant(svc);

    await t.step(
      "ten wrong passwords from ten addresses, then even the right one is 429",
      async () => {
        for (let i = 0; i < LOGIN_FAILURES_MAX; i++) {
          const r = await login(m.email, `wrong password ${i}`);
          assert.deepEqual([r.status, r.json.error], [401, "Invalid email or password."]);
        }
        const right = await login(m.email.toUpperCase(), m.password);
        assert.deepEqual([right.status, right.json.error], throttled);
        const wait = Number(right.headers.get("retry-after"));
        assert.ok(wait > 0 && wait <= LOGIN_FAILURE_WINDOW_MS / 1000, `Retry-After ${wait}`);
        assert.equal(right.headers.get("set-cookie"), null, "no session");
      },
    );

    await t.step("another account is not held up; the window's end lets the owner in", async () => {
      const other = await createMerchant(svc);
      assert.equal((await login(other.email, other.password)).status, 200);
      svc.clock.advance(LOGIN_FAILURE_WINDOW_MS);
      const r = await login(m.email, m.password);
      assert.equal(r.status, 200, r.text);
    });

    await t.step("a successful login starts the count again", async () => {
      for (let i = 0; i < LOGIN_FAILURES_MAX - 1; i++) {
        assert.equal((await login(m.email, "wrong password")).status, 401);
      }
      assert.equal((await login(m.email, m.password)).status, 200);
      for (let i = 0; i < LOGIN_FAILURES_MAX - 1; i++) {
        assert.equal((await login(m.email, "wrong password")).status, 401);
      }
      assert.equal((await login(m.email, m.password)).status, 200);
    });

    await t.step("an address with no account is limited alike (nothing to enumerate)", async () => {
      const answers = [];
      for (let i = 0; i <= LOGIN_FAILURES_MAX; i++) {
        answers.push((await login("nobody@shop.example", "some password")).status);
      }
      assert.deepEqual(answers, [...Array(LOGIN_FAILURES_MAX).fill(401), 429]);
    });

    await t.step("50 concurrent guesses: at most ten are checked", async () => {
      const victim = await createMerchant(svc);
      const r = await stampede(svc, (i) => ({
        method: "POST",
        path: "/api/merchant/login",
        body: { email: victim.email, password: `guess ${i}` },
        headers: { "x-forwarded-for": `203.0.113.${i}` },
      }), { copies: 50 });
      assert.deepEqual(r.byStatus, { 401: LOGIN_FAILURES_MAX, 429: 50 - LOGIN_FAILURES_MAX });
    });
  } finally {
    await svc.close();
  }
});

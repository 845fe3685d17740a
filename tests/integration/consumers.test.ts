/** Consumer sessions: managed or external wallets, the consumer_token cookie, balance, activity. */
import assert from "node:assert/strict";
import { startTestService } from "../helpers/service.ts";
import { api, cookieFrom } from "../helpers/accounts.ts";

Deno.test("consumer sessions", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const call = api(svc);
  try {
    let cookie = "";
    let managedAddress = "";

    await t.step("no address: a new managed wallet and account each time", async () => {
      const a = await call("POST", "/api/consumer/session", { body: {} });
      const b = await call("POST", "/api/consumer/session", {});
      assert.equal(a.status, 200, a.text);
      const accA = a.json.account as { id: string; walletAddress: string };
      const accB = b.json.account as { id: string; walletAddress: string };
      assert.notEqual(accA.id, accB.id);
      assert.notEqual(accA.walletAddress, accB.walletAddress);
      assert.match(accA.walletAddress, /^0x[0-9a-fA-F]{40}$/);
      const set = a.headers.getSetCookie().find((c) => c.startsWith("consumer_token="))!;
      assert.match(set, /HttpOnly/);
      assert.match(set, /SameSite=Lax/);
      assert.match(set, /Max-Age=2592000/);
      cookie = cookieFrom(a.headers, "consumer_token")!;
      managedAddress = accA.walletAddress;
      const me = await call("GET", "/api/consumer/session", { cookie });
      assert.equal(me.status, 200);
      assert.equal((me.json.account as { id: string }).id, accA.id);
    });

    await t.step(
      "only an omitted walletAddress makes a managed wallet; anything else invalid is refused",
      async () => {
        const count = async () => {
          const [r] = await svc.db.sql`
            select (select count(*)::int from consumers) as consumers,
                   (select count(*)::int from wallets) as wallets`;
          return r;
        };
        const before = await count();
        for (const walletAddress of ["", "   ", null, 0, false, {}, [], "0x123", "dEaD"]) {
          const r = await call("POST", "/api/consumer/session", { body: { walletAddress } });
          assert.deepEqual(
            [r.status, r.json.success, r.json.error],
            [400, false, "Not a valid wallet address."],
            JSON.stringify(walletAddress),
          );
          assert.equal(cookieFrom(r.headers, "consumer_token"), undefined);
        }
        assert.deepEqual(await count(), before, "no wallet or account was made");
      },
    );

    await t.step("an external address reuses its account and updates lastSeenAt", async () => {
      const address = "0x000000000000000000000000000000000000dEaD";
      const first = await call("POST", "/api/consumer/session", {
        body: { walletAddress: address },
      });
      svc.clock.advance(60_000);
      const second = await call("POST", "/api/consumer/session", {
        body: { walletAddress: address.toLowerCase() },
      });
      const id1 = (first.json.account as { id: string }).id;
      const id2 = (second.json.account as { id: string }).id;
      assert.equal(id1, id2);
      const session = await call("GET", "/api/consumer/session", {
        cookie: cookieFrom(second.headers, "consumer_token"),
      });
      const acc = session.json.account as {
        lastSeenAt: string;
        walletType: string;
        walletAddress: string;
      };
      assert.equal(acc.walletType, "EXTERNAL");
      assert.equal(acc.walletAddress, address);
      assert.equal(acc.lastSeenAt, svc.clock.now().toISOString());
    });

    await t.step(
      "a replay with the same Idempotency-Key answers the first body and a session for its account",
      async () => {
        const accounts = async () =>
          (await svc.db.sql`select count(*)::int as n from consumers`)[0].n;
        for (
          const body of [undefined, { walletAddress: "0x00000000000000000000000000000000000beef1" }]
        ) {
          const headers = { "idempotency-key": `consumer-${crypto.randomUUID()}` };
          const first = await call("POST", "/api/consumer/session", { headers, body });
          assert.equal(first.status, 200, first.text);
          const before = await accounts();
          svc.clock.advance(3600_000);
          const replay = await call("POST", "/api/consumer/session", { headers, body });
          assert.equal(replay.status, 200, replay.text);
          assert.equal(replay.headers.get("idempotent-replayed"), "true");
          assert.equal(replay.text, first.text);
          assert.equal(await accounts(), before, "the replay made no account");
          const set = replay.headers.getSetCookie().find((c) => c.startsWith("consumer_token="));
          assert.ok(set, "the replay sets the session cookie");
          assert.match(set, /HttpOnly/);
          assert.match(set, /SameSite=Lax/);
          assert.match(set, /Max-Age=2592000/);
          const session = cookieFrom(replay.headers, "consumer_token")!;
          // Issued at the replay (the token itself is not kept with the stored answer).
          const payload = session.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
          assert.equal(JSON.parse(atob(payload)).iat, Math.floor(svc.clock.now().getTime() / 1000));
          const me = await call("GET", "/api/consumer/session", { cookie: session });
          assert.equal(me.status, 200, me.text);
          assert.equal(
            (me.json.account as { id: string }).id,
            (first.json.account as { id: string }).id,
          );
        }
      },
    );

    await t.step("balance and activity come from the chain", async () => {
      const chain = svc.deps.chain;
      const addr = managedAddress.toLowerCase() as `0x${string}`;
      await chain.mintUsdc({ profile: "testnet", to: addr, amount: 3_250_000n });
      const bal = await call("GET", "/api/consumer/balance", { cookie });
      assert.equal(bal.status, 200);
      const testnet = (bal.json.balances as Array<{ chain: string; balance: string }>).find((b) =>
        b.chain === "testnet"
      );
      assert.equal(testnet?.balance, "3.250000");
      const act = await call("GET", "/api/consumer/activity", { cookie });
      const items = act.json.activity as Array<
        { direction: string; amount: string; explorerUrl: string; chain: string }
      >;
      assert.equal(items.length, 1);
      assert.equal(items[0].direction, "in");
      assert.equal(items[0].amount, "3.250000");
      assert.match(items[0].explorerUrl, /\/explorer\/testnet\/tx\/0x[0-9a-f]{64}$/);
    });

    await t.step("bad, expired and missing sessions", async () => {
      const none = await call("GET", "/api/consumer/session");
      assert.deepEqual([none.status, none.json.error], [401, "No session."]);
      const bad = await call("GET", "/api/consumer/session", {
        cookie: "consumer_token=abc.def.ghi",
      });
      assert.deepEqual([bad.status, bad.json.error], [401, "Invalid or expired session."]);
      // A merchant token, however valid, is not a consumer token.
      const { signToken } = await import("../../src/http/session-token.ts");
      const acc = (await call("GET", "/api/consumer/session", { cookie })).json.account as {
        id: string;
      };
      const merchantTyp = await signToken(
        svc.deps.config,
        "merchant",
        { sub: acc.id },
        svc.clock.now(),
        3600,
      );
      const wrongTyp = await call("GET", "/api/consumer/session", {
        cookie: `consumer_token=${merchantTyp}`,
      });
      assert.deepEqual([wrongTyp.status, wrongTyp.json.error], [
        401,
        "Invalid or expired session.",
      ]);
      svc.clock.advance(30 * 24 * 3600 * 1000 + 1000);
      const expired = await call("GET", "/api/consumer/session", { cookie });
      assert.deepEqual([expired.status, expired.json.error], [401, "Invalid or expired session."]);
      const out = await call("DELETE", "/api/consumer/session", { cookie });
      assert.deepEqual(out.json, { success: true });
      assert.ok(out.headers.getSetCookie().some((c) => c.startsWith("consumer_token=;")));
    });
  } finally {
    await svc.close();
  }
});

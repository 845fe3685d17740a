/** Payout wallet: managed wallets, and linking an external wallet with Sign-In with Ethereum. */
import assert from "node:assert/strict";
import { privateKeyToAccount } from "viem/accounts";
import { createSiweMessage, parseSiweMessage } from "viem/siwe";
import { startTestService } from "../helpers/service.ts";
import { api, cookieFrom, createMerchant } from "../helpers/accounts.ts";
import { ANVIL_KEYS } from "../helpers/anvil.ts";
import { newSiweNonce } from "../../src/chain/siwe.ts";

const alice = privateKeyToAccount(ANVIL_KEYS[2]);
const mallory = privateKeyToAccount(ANVIL_KEYS[3]);

Deno.test("wallet linking with SIWE", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const call = api(svc);
  try {
    const m = await createMerchant(svc);
    const challenge = async (address: string = alice.address, cookie = m.cookie) => {
      const r = await call("GET", `/api/merchant/wallet/connect?address=${address}`, { cookie });
      assert.equal(r.status, 200, r.text);
      const nonceCookie = cookieFrom(r.headers, "wallet_connect_nonce")!;
      assert.ok(nonceCookie);
      return {
        message: r.json.message as string,
        both: `${cookie}; ${nonceCookie}`,
        headers: r.headers,
      };
    };
    const link = (both: string, body: Record<string, unknown>) =>
      call("POST", "/api/merchant/wallet/connect", { cookie: both, body });

    await t.step(
      "the challenge is an EIP-4361 message for our host, and a 5-minute HttpOnly cookie",
      async () => {
        const c = await challenge();
        const parsed = parseSiweMessage(c.message);
        assert.equal(parsed.domain, new URL(svc.baseUrl).host);
        assert.equal(parsed.uri, svc.baseUrl);
        assert.equal(parsed.version, "1");
        assert.equal(parsed.chainId, 5042);
        assert.equal(parsed.address, alice.address);
        assert.ok(parsed.nonce && parsed.nonce.length >= 8);
        assert.ok(parsed.issuedAt instanceof Date);
        const set = c.headers.getSetCookie().find((x) => x.startsWith("wallet_connect_nonce="))!;
        assert.match(set, /HttpOnly/);
        assert.match(set, /Max-Age=300/);
      },
    );

    await t.step("successive challenges carry unrelated nonces", async () => {
      const nonces: string[] = [];
      for (let i = 0; i < 20; i++) {
        nonces.push(parseSiweMessage((await challenge()).message).nonce!);
      }
      assertUnpredictable(nonces);
    });

    await t.step("missing and invalid inputs", async () => {
      const r = await call("GET", "/api/merchant/wallet/connect", { cookie: m.cookie });
      assert.deepEqual([r.status, r.json.error], [400, "address query param required."]);
      const bad = await call("GET", "/api/merchant/wallet/connect?address=0x1234", {
        cookie: m.cookie,
      });
      assert.equal(bad.status, 400);
      const c = await challenge();
      const signature = await alice.signMessage({ message: c.message });
      const missing = await link(c.both, { address: alice.address, message: c.message, signature });
      assert.deepEqual([missing.status, missing.json.error], [
        400,
        "address, message, signature, and walletKind are required.",
      ]);
      const kind = await link(c.both, {
        address: alice.address,
        message: c.message,
        signature,
        walletKind: "LEDGER",
      });
      assert.deepEqual([kind.status, kind.json.error], [
        400,
        "walletKind must be one of: EXTENSION_WALLET, LINK_WALLET, HOSTED_WALLET",
      ]);
    });

    const CHALLENGE = "Missing or expired challenge — request a new one via GET first.";
    const SIG = "Signature verification failed.";

    await t.step("no nonce cookie, or one older than 5 minutes", async () => {
      const c = await challenge();
      const signature = await alice.signMessage({ message: c.message });
      const body = {
        address: alice.address,
        message: c.message,
        signature,
        walletKind: "EXTENSION_WALLET",
      };
      const none = await link(m.cookie, body);
      assert.deepEqual([none.status, none.json.error], [400, CHALLENGE]);
      svc.clock.advance(5 * 60 * 1000 + 1);
      const late = await link(c.both, body);
      assert.deepEqual([late.status, late.json.error], [400, CHALLENGE]);
    });

    await t.step("a bad signature, another signer, a mismatched address", async () => {
      let c = await challenge();
      const junk = await link(c.both, {
        address: alice.address,
        message: c.message,
        signature: "0x" + "11".repeat(65),
        walletKind: "EXTENSION_WALLET",
      });
      assert.deepEqual([junk.status, junk.json.error], [401, SIG]);
      c = await challenge();
      const byMallory = await link(c.both, {
        address: alice.address,
        message: c.message,
        signature: await mallory.signMessage({ message: c.message }),
        walletKind: "EXTENSION_WALLET",
      });
      assert.deepEqual([byMallory.status, byMallory.json.error], [401, SIG]);
      c = await challenge();
      const otherAddress = await link(c.both, {
        address: mallory.address,
        message: c.message,
        signature: await alice.signMessage({ message: c.message }),
        walletKind: "EXTENSION_WALLET",
      });
      assert.deepEqual([otherAddress.status, otherAddress.json.error], [401, SIG]);
    });

    await t.step(
      "a message for another domain is refused even when signed by the wallet",
      async () => {
        const c = await challenge();
        const p = parseSiweMessage(c.message);
        const forged = createSiweMessage({
          domain: "evil.example",
          uri: "https://evil.example",
          address: alice.address,
          chainId: p.chainId!,
          nonce: p.nonce!,
          issuedAt: p.issuedAt,
          expirationTime: p.expirationTime,
          version: "1",
        });
        const r = await link(c.both, {
          address: alice.address,
          message: forged,
          signature: await alice.signMessage({ message: forged }),
          walletKind: "EXTENSION_WALLET",
        });
        assert.deepEqual([r.status, r.json.error], [401, SIG]);
      },
    );

    await t.step(
      "a correct signature links the wallet; the nonce cannot be used twice",
      async () => {
        const c = await challenge();
        const body = {
          address: alice.address,
          message: c.message,
          signature: await alice.signMessage({ message: c.message }),
          walletKind: "LINK_WALLET",
        };
        const r = await link(c.both, body);
        assert.equal(r.status, 200, r.text);
        assert.deepEqual(r.json, {
          success: true,
          wallet: { walletProvider: "LINK_WALLET", walletAddress: alice.address },
        });
        const w = await call("GET", "/api/merchant/wallet", { cookie: m.cookie });
        assert.deepEqual(w.json.wallet, {
          walletProvider: "LINK_WALLET",
          walletAddress: alice.address,
          managedWalletId: null,
        });
        const replay = await link(c.both, body);
        assert.deepEqual([replay.status, replay.json.error], [400, CHALLENGE]);
      },
    );

    await t.step("the merchant key works as well as the cookie", async () => {
      const r = await call("GET", `/api/merchant/wallet/connect?address=${mallory.address}`, {
        headers: { "x-api-key": m.apiKey },
      });
      assert.equal(r.status, 200);
      const nonce = cookieFrom(r.headers, "wallet_connect_nonce")!;
      const message = r.json.message as string;
      const done = await call("POST", "/api/merchant/wallet/connect", {
        headers: { "x-api-key": m.apiKey },
        cookie: nonce,
        body: {
          address: mallory.address,
          message,
          signature: await mallory.signMessage({ message }),
          walletKind: "HOSTED_WALLET",
        },
      });
      assert.equal(done.status, 200, done.text);
    });

    await t.step(
      "PATCH: other values point to wallet connect; MANAGED provisions a new wallet once",
      async () => {
        const other = await call("PATCH", "/api/merchant/wallet", {
          cookie: m.cookie,
          body: { walletProvider: "EXTENSION_WALLET" },
        });
        assert.equal(other.status, 400);
        assert.match(String(other.json.error), /\/api\/merchant\/wallet\/connect/);
        const r = await call("PATCH", "/api/merchant/wallet", {
          cookie: m.cookie,
          body: { walletProvider: "MANAGED" },
        });
        assert.equal(r.status, 200, r.text);
        assert.equal(
          r.json.message,
          "A new service-managed wallet has been created for your payouts.",
        );
        const wallet = r.json.wallet as { walletProvider: string; walletAddress: string };
        assert.equal(wallet.walletProvider, "MANAGED");
        assert.notEqual(
          wallet.walletAddress,
          m.walletAddress,
          "a brand-new wallet, not the previous one",
        );
        const again = await call("PATCH", "/api/merchant/wallet", {
          cookie: m.cookie,
          body: { walletProvider: "MANAGED" },
        });
        assert.deepEqual([again.status, again.json.error], [
          409,
          "You already have a service-managed wallet.",
        ]);
        const gas = await svc.deps.chain.nativeBalance(
          "production",
          wallet.walletAddress.toLowerCase() as `0x${string}`,
        );
        // Issue 12 item 5: no grant at creation; the sender tops it up before it first sends.
        assert.equal(gas, 0n, "a new managed wallet gets gas only when it sends");
      },
    );
    await t.step("30 PATCHes to MANAGED at once: one wallet made, the rest 409", async () => {
      const linked = await createMerchant(svc, { walletProvider: "LINK_WALLET" });
      const answers = await Promise.all(
        Array.from({ length: 30 }, () =>
          call("PATCH", "/api/merchant/wallet", {
            cookie: linked.cookie,
            body: { walletProvider: "MANAGED" },
          })),
      );
      const won = answers.filter((a) => a.status === 200);
      assert.equal(won.length, 1, answers.map((a) => a.status).join(","));
      for (const a of answers.filter((a) => a.status !== 200)) {
        assert.deepEqual([a.status, a.json.error], [
          409,
          "You already have a service-managed wallet.",
        ]);
      }
      const made = (won[0].json.wallet as { walletAddress: string }).walletAddress;
      const payout = await call("GET", "/api/merchant/wallet", { cookie: linked.cookie });
      assert.equal((payout.json.wallet as { walletAddress: string }).walletAddress, made);
      const [{ n }] = await svc.db.sql`
        select count(*)::int as n from merchant_wallets where merchant_id = ${linked.id}`;
      assert.equal(n, 1, "no wallet left behind by a losing request");
    });
  } finally {
    await svc.close();
  }
});

/**
 * Nonces as EIP-4361 wants them (alphanumeric, at least 8 characters), all distinct, and none a
 * shift of another (viem's generateSiweNonce makes each the previous one moved by a character).
 */
function assertUnpredictable(nonces: string[]) {
  for (const n of nonces) assert.match(n, /^[A-Za-z0-9]{8,}$/);
  assert.equal(new Set(nonces).size, nonces.length, "all distinct");
  const heads = new Set(nonces.map((n) => n.slice(0, -1)));
  const shifted = nonces.filter((n) => heads.has(n.slice(1)));
  assert.deepEqual(shifted, [], "no nonce is another one shifted by a character");
  // No long common run between successive nonces either (a shift by k characters).
  for (let i = 1; i < nonces.length; i++) {
    const [a, b] = [nonces[i - 1], nonces[i]];
    for (let k = 0; k + 8 <= b.length; k++) {
      assert.ok(!a.includes(b.slice(k, k + 8)), `${a} / ${b} share ${b.slice(k, k + 8)}`);
    }
  }
}

Deno.test("SIWE nonces come from the CSPRNG: unique, alphanumeric, unrelated", () => {
  const nonces = Array.from({ length: 2000 }, () => newSiweNonce());
  assertUnpredictable(nonces);
  for (const n of nonces) assert.ok(n.length >= 32, n);
  // Every one of the 62 characters turns up: not a narrower alphabet.
  assert.equal(new Set(nonces.join("")).size, 62);
});

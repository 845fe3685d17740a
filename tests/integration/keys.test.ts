/** API keys: issued once, stored hashed, listed by hint, revoked for good, rotated. */
import assert from "node:assert/strict";
import { startTestService } from "../helpers/service.ts";
import { api, createMerchant } from "../helpers/accounts.ts";
import { waitFor } from "../helpers/poll.ts";

Deno.test("api keys: create, list, revoke, rotate", async (t) => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const call = api(svc);
  try {
    const m = await createMerchant(svc);
    const created: Record<string, { id: string; key: string }> = {};

    await t.step("each type and environment has its prefix; the key is shown once", async () => {
      for (
        const [type, environment, prefix] of [
          ["secret", "test", "svc_sec_test_"],
          ["secret", "live", "svc_sec_"],
          ["publishable", "test", "svc_pub_test_"],
          ["publishable", "live", "svc_pub_"],
        ]
      ) {
        const r = await call("POST", "/api/keys", {
          headers: { "x-api-key": m.apiKey },
          body: {
            type,
            environment,
            label: `${type} ${environment}`,
            scopes: type === "secret" ? ["payments"] : undefined,
          },
        });
        assert.equal(r.status, 201, r.text);
        const key = r.json.key as {
          id: string;
          key: string;
          hint: string;
          type: string;
          environment: string;
        };
        assert.ok(key.key.startsWith(prefix));
        assert.match(key.key.slice(prefix.length), /^[0-9a-f]{48}$/);
        assert.equal(key.hint, `${key.key.slice(0, 16)}...`);
        assert.deepEqual([key.type, key.environment], [type, environment]);
        created[`${type}-${environment}`] = key;
      }
      const rows = await svc.db.sql`select * from api_keys`;
      const dump = JSON.stringify(rows);
      for (const k of Object.values(created)) {
        assert.ok(!dump.includes(k.key), "no raw key in the database");
      }
      const list = await call("GET", "/api/keys", { cookie: m.cookie });
      const keys = list.json.keys as Array<Record<string, unknown>>;
      assert.equal(keys.length, 5, "four new keys and the merchant key");
      assert.ok(keys.every((k) => !("key" in k)), "listing never returns a key");
      assert.ok(keys.some((k) => k.type === "merchant" && String(k.hint).startsWith("svc_live_")));
    });

    await t.step("bad requests", async () => {
      for (
        const [body, error] of [
          [{ type: "root", environment: "test" }, "type must be secret or publishable."],
          [{ type: "secret", environment: "prod" }, "environment must be test or live."],
          [
            { type: "secret", environment: "test", scopes: ["everything"] },
            "scopes must be a list of: payments, escrow, streams, payroll, x402, agents, jobs, bridge",
          ],
        ] as const
      ) {
        const r = await call("POST", "/api/keys", { cookie: m.cookie, body });
        assert.deepEqual([r.status, r.json.error], [400, error]);
      }
      const r = await call("DELETE", "/api/keys/not-a-uuid", { cookie: m.cookie });
      assert.deepEqual([r.status, r.json.error], [404, "API key not found."]);
    });

    await t.step("a key works until revoked, then is permanently 401", async () => {
      const k = created["secret-live"];
      const before = await call("GET", "/api/merchant/dashboard", {
        headers: { "x-api-key": k.key },
      });
      assert.equal(before.status, 200);
      const del = await call("DELETE", `/api/keys/${k.id}`, { cookie: m.cookie });
      assert.equal(del.status, 200);
      assert.equal((del.json.key as { status: string }).status, "revoked");
      const after = await call(
        "GET",
        "/api/merchant/wallet/connect?address=0x000000000000000000000000000000000000dEaD",
        {
          headers: { "x-api-key": k.key },
        },
      );
      assert.deepEqual([after.status, after.json.error], [401, "Invalid API key"]);
      const again = await call("DELETE", `/api/keys/${k.id}`, { cookie: m.cookie });
      assert.deepEqual([again.status, again.json.error], [400, "This API key is already revoked."]);
    });

    await t.step(
      "rotation issues a replacement with the same settings and revokes the old key",
      async () => {
        const old = created["secret-test"];
        const r = await call("POST", `/api/keys/${old.id}/rotate`, { cookie: m.cookie });
        assert.equal(r.status, 201, r.text);
        const fresh = r.json.key as { id: string; key: string; label: string; scopes: string[] };
        assert.equal(r.json.revokedKeyId, old.id);
        assert.ok(fresh.key.startsWith("svc_sec_test_"));
        assert.notEqual(fresh.key, old.key);
        assert.equal(fresh.label, "secret test");
        assert.deepEqual(fresh.scopes, ["payments"]);
        const oldUse = await call("GET", "/api/merchant/dashboard", {
          headers: { "x-api-key": old.key },
        });
        assert.equal(oldUse.status, 404);
        const newUse = await call("GET", "/api/merchant/dashboard", {
          headers: { "x-api-key": fresh.key },
        });
        assert.equal(newUse.status, 200);
      },
    );

    await t.step("the merchant key rotates (and cannot simply be revoked)", async () => {
      const list = await call("GET", "/api/keys", { cookie: m.cookie });
      const merchantKey = (list.json.keys as Array<{ id: string; type: string }>).find((k) =>
        k.type === "merchant"
      )!;
      const del = await call("DELETE", `/api/keys/${merchantKey.id}`, { cookie: m.cookie });
      assert.deepEqual([del.status, del.json.error], [
        400,
        "The merchant key cannot be revoked; rotate it instead.",
      ]);
      const r = await call("POST", `/api/keys/${merchantKey.id}/rotate`, {
        headers: { "x-api-key": m.apiKey },
      });
      assert.equal(r.status, 201);
      const next = (r.json.key as { key: string }).key;
      assert.match(next, /^svc_live_[0-9a-f]{48}$/);
      const me = await call("GET", "/api/merchant/me", { cookie: m.cookie });
      assert.equal(
        (me.json.merchant as { apiKeyHint: string }).apiKeyHint,
        `${next.slice(0, 16)}...`,
      );
      const oldKey = await call("GET", "/api/keys", { headers: { "x-api-key": m.apiKey } });
      assert.deepEqual([oldKey.status, oldKey.json.error], [401, "Invalid API key"]);
    });

    /**
     * `n` calls of `path` for one key, all let go at once: the test holds the key's row lock
     * until every call waits on it (so each has read the key as it was before), then lets go.
     */
    const racing = async (method: string, path: (id: string) => string, n: number) => {
      const made = await call("POST", "/api/keys", {
        cookie: m.cookie,
        body: { type: "secret", environment: "test" },
      });
      const id = (made.json.key as { id: string }).id;
      let calls: ReturnType<typeof call>[] = [];
      await svc.db.sql.begin(async (tx) => {
        await tx`select 1 from api_keys where id = ${id} for update`;
        calls = Array.from({ length: n }, () => call(method, path(id), { cookie: m.cookie }));
        await waitFor(async () => {
          const [{ waiting }] = await svc.db.sql`
            select count(*)::int as waiting from pg_stat_activity
            where datname = current_database() and wait_event_type = 'Lock'
              and query ilike '%api_keys%'`;
          return waiting === n;
        }, { what: `${n} calls waiting on the key's row` });
      });
      const answers = await Promise.all(calls);
      return { id, answers };
    };

    await t.step("concurrent revokes of one key: one wins, reporting what is stored", async () => {
      const { id, answers } = await racing("DELETE", (id) => `/api/keys/${id}`, 6);
      const won = answers.filter((a) => a.status === 200);
      assert.equal(won.length, 1, JSON.stringify(answers.map((a) => a.status)));
      const [row] = await svc.db.sql`select revoked_at from api_keys where id = ${id}`;
      assert.equal(
        (won[0].json.key as { revokedAt: string }).revokedAt,
        row.revokedAt.toISOString(),
      );
      for (const a of answers.filter((a) => a.status !== 200)) {
        assert.deepEqual([a.status, a.json.error], [400, "This API key is already revoked."]);
      }
    });

    await t.step(
      "concurrent rotations of one key: one 201, every other the sequential 400",
      async () => {
        const keys = async () =>
          (await svc.db.sql`select count(*)::int as n from api_keys where merchant_id = ${m.id}`)[0]
            .n;
        const before = await keys();
        const { id, answers } = await racing("POST", (id) => `/api/keys/${id}/rotate`, 6);
        const won = answers.filter((a) => a.status === 201);
        assert.equal(won.length, 1, JSON.stringify(answers.map((a) => a.status)));
        for (const a of answers.filter((a) => a.status !== 201)) {
          assert.deepEqual([a.status, a.json.error], [400, "This API key is already revoked."]);
        }
        const [row] = await svc.db.sql`select replaced_by from api_keys where id = ${id}`;
        assert.equal(row.replacedBy, (won[0].json.key as { id: string }).id);
        assert.equal(await keys(), before + 2, "the raced key and one replacement");
      },
    );

    await t.step("one merchant's key cannot touch another merchant's keys", async () => {
      const other = await createMerchant(svc);
      const target = created["publishable-live"];
      const r = await call("DELETE", `/api/keys/${target.id}`, { cookie: other.cookie });
      assert.deepEqual([r.status, r.json.error], [404, "API key not found."]);
    });
  } finally {
    await svc.close();
  }
});

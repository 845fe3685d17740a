/** `deno task webhooks:replay` from an operator's shell, against a running deployment. */
import assert from "node:assert/strict";
import { startTestService } from "../helpers/service.ts";
import { createMerchant } from "../helpers/accounts.ts";
import { startReceiver } from "../helpers/receiver.ts";
import { waitFor } from "../helpers/poll.ts";
import { ANVIL_KEYS } from "../helpers/anvil.ts";
import { emit, sweepDue } from "../../src/modules/webhooks/webhooks.service.ts";

Deno.test("webhooks:replay sends undelivered deliveries again, by id or by time", async () => {
  const svc = await startTestService({ env: { RATE_LIMITS: "off" } });
  const receiver = startReceiver();
  receiver.respond = () => 500;
  try {
    const m = await createMerchant(svc);
    const ids: string[] = [];
    for (const ref of ["pay_ref_cli_1", "pay_ref_cli_2"]) {
      ids.push(
        await svc.db.sql.begin((tx) =>
          emit(svc.deps, tx, {
            merchantId: m.id,
            url: `${receiver.url}/h`,
            event: "payment.settled",
            payload: { reference: ref },
          })
        ),
      );
    }
    // Four failed attempts each: undelivered.
    const status = async (id: string) =>
      (await svc.db.sql`select status from webhook_deliveries where id = ${id}`)[0].status;
    await waitFor(async () =>
      (await svc.db.sql`select count(*)::int as n from webhook_attempts`)[0].n === 2
    );
    for (const step of [60_000, 300_000, 1_800_000]) {
      svc.clock.advance(step);
      await sweepDue(svc.deps);
    }
    assert.deepEqual([await status(ids[0]), await status(ids[1])], ["undelivered", "undelivered"]);
    receiver.respond = () => 200;

    // The operator's command runs beside the service: same database, same chains.
    const env: Record<string, string> = {
      DATABASE_URL: svc.db.url,
      JWT_SECRET: svc.deps.config.JWT_SECRET!,
      WALLET_MASTER_KEY: svc.deps.config.WALLET_MASTER_KEY!,
      DATA_DIR: Deno.makeTempDirSync(),
      APP_ENV: "test",
      LOG_LEVEL: "error",
    };
    for (const p of svc.deps.chain.profiles()) {
      const rt = svc.deps.chain.runtime(p);
      env[`${rt.profile.envPrefix}_RPC_URL`] = rt.rpcUrl;
      env[`${rt.profile.envPrefix}_OPERATOR_KEY`] = ANVIL_KEYS[0];
      env[`${rt.profile.envPrefix}_CONFIRMATIONS`] = "0";
    }
    const run = async (...args: string[]) => {
      const out = await new Deno.Command(Deno.execPath(), {
        args: ["run", "--allow-all", "src/cli/webhooks-replay.ts", ...args],
        env,
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
      return new TextDecoder().decode(out.stdout);
    };
    const one = await run(ids[0]);
    assert.match(one, new RegExp(`${ids[0]} payment.settled → delivered`));
    assert.equal(await status(ids[0]), "delivered");
    assert.equal(await status(ids[1]), "undelivered");

    const since = new Date(Date.now() - 3600_000).toISOString();
    const all = await run("--undelivered", "--since", since);
    assert.match(all, new RegExp(`${ids[1]} payment.settled → delivered`));
    assert.equal(await status(ids[1]), "delivered");
    const got = receiver.received.filter((r) => r.headers["webhook-id"] === ids[1]);
    assert.equal(got.length, 5, "four failures and the replay, one webhook-id");

    const none = await run("--undelivered", "--since", since);
    assert.match(none, /Nothing to replay\./);
    const bad = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-all", "src/cli/webhooks-replay.ts", "--undelivered"],
      env,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(bad.code, 2);
    assert.match(new TextDecoder().decode(bad.stderr), /usage: deno task webhooks:replay/);
    // A delivery that is not there: the catalog's words, and exit 1 (it was 0, with the code).
    const unknown = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-all", "src/cli/webhooks-replay.ts", "msg_doesnotexist"],
      env,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(unknown.code, 1);
    assert.match(
      new TextDecoder().decode(unknown.stdout),
      /^msg_doesnotexist → Webhook delivery not found\./m,
    );
    assert.match(
      new TextDecoder().decode(unknown.stderr),
      /1 of the deliveries asked for were not delivered/,
    );
  } finally {
    await receiver.close();
    await svc.close();
  }
});

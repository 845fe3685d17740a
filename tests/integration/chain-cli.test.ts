/** Operator tasks against a running deployment: faucet and chain:status. */
import assert from "node:assert/strict";
import { startTestService } from "../helpers/service.ts";
import { ANVIL_KEYS } from "../helpers/anvil.ts";
import { encodeFunctionData } from "viem";
import { GatewayVault } from "../../src/chain/contracts/artifacts/index.ts";
import { deriveRelayers } from "../../src/chain/relayers.ts";

Deno.test("faucet mints test USDC (never on a configured production chain); chain:status reports", async () => {
  const svc = await startTestService();
  try {
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
    }
    const run = async (script: string, ...args: string[]) => {
      const out = await new Deno.Command(Deno.execPath(), {
        args: ["run", "--allow-all", `src/cli/${script}`, ...args],
        env,
        stdout: "piped",
        stderr: "piped",
      }).output();
      return {
        code: out.code,
        out: new TextDecoder().decode(out.stdout),
        err: new TextDecoder().decode(out.stderr),
      };
    };
    const to = "0x000000000000000000000000000000000000bEEF";
    const ok = await run("faucet.ts", to, "12.5", "--network", "testnet");
    assert.equal(ok.code, 0, ok.err);
    assert.match(ok.out, /Minted 12\.5 USDC to 0x0+bEEF on testnet\./);
    // The command's environment names no PORT or BASE_URL: the link is the running service's,
    // and it opens.
    const hash = /tx:\s+(0x[0-9a-f]{64})/.exec(ok.out)?.[1];
    assert.ok(hash, ok.out);
    const link = `${svc.baseUrl}/explorer/testnet/tx/${hash}`;
    assert.ok(ok.out.includes(`explorer ${link}\n`), ok.out);
    assert.doesNotMatch(ok.out, /localhost:3000/);
    const page = await fetch(link);
    assert.equal(page.status, 200);
    assert.match(await page.text(), new RegExp(hash));
    assert.equal(
      await svc.deps.chain.usdcBalance("testnet", to.toLowerCase() as `0x${string}`),
      12_500_000n,
    );

    // A mixed-case address whose checksum is wrong: refused in a sentence, not a stack trace.
    const typo = await run("faucet.ts", "0x70997970C51812dc3A010C7d01b50b54d5678d5f", "1");
    assert.equal(typo.code, 2);
    assert.match(
      typo.err,
      /Not a valid wallet address: 0x70997970C51812dc3A010C7d01b50b54d5678d5f/,
    );
    assert.doesNotMatch(typo.err, /InvalidAddressError|\bat /);

    // Without --network the faucet funds the chain payment links settle on (production); here
    // that is a configured chain, so it refuses, by flag or by default.
    for (const args of [["--network", "production"], []]) {
      const prod = await run("faucet.ts", to, "1", ...args);
      assert.notEqual(prod.code, 0);
      assert.match(prod.err, /Refusing to mint on production: it is a real production chain\./);
    }
    const bad = await run("faucet.ts", to, "1.0000001");
    assert.equal(bad.code, 2);
    assert.match(bad.err, /Not a valid USDC amount/);

    // In production a configured chain's USDC is named by address: contracts:deploy deploys no
    // test token there (an outside audit, 2026-12-01: a Compose deployment going live did).
    const random = () =>
      Array.from(crypto.getRandomValues(new Uint8Array(32)), (b) => b.toString(16).padStart(2, "0"))
        .join("");
    const live = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-all", "src/cli/contracts-deploy.ts", "--network", "testnet"],
      env: {
        ...env,
        APP_ENV: "production",
        BASE_URL: "https://pay.example.com",
        JWT_SECRET: random(),
        WALLET_MASTER_KEY: random(),
        METRICS_TOKEN: random(),
        SMTP_URL: "smtp://mail.example.com:587",
        TESTNET_OPERATOR_KEY: `0x${random()}`,
        PRODUCTION_OPERATOR_KEY: `0x${random()}`,
      },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const liveErr = new TextDecoder().decode(live.stderr);
    assert.equal(live.code, 2, liveErr);
    assert.match(liveErr, /TESTNET_USDC_ADDRESS is not set: in production the USDC of testnet/);

    // An operator with no gas: told so with the fix, not a stack trace.
    const poor = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--allow-all",
        "src/cli/contracts-deploy.ts",
        "--network",
        "testnet",
        "--force",
        "--only",
        "BatchPayout",
      ],
      env: { ...env, TESTNET_OPERATOR_KEY: `0x${random()}` },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const poorErr = new TextDecoder().decode(poor.stderr);
    assert.equal(poor.code, 2, poorErr);
    assert.match(poorErr, /The operator 0x[0-9a-fA-F]{40} has too little native gas on testnet/);
    assert.doesNotMatch(poorErr, /\bat /);

    // Every contract in place, and one relayer of the command's pool (derived from the operator
    // key it is given) no longer a settler of the gateway vault: the run makes it one again (as
    // every process's start does) and says so. It said "Nothing to deploy.", which read as a run
    // that did nothing.
    const rt = svc.deps.chain.runtime("testnet");
    const relayer = deriveRelayers(ANVIL_KEYS[0] as `0x${string}`, 1)[0].address;
    const settler = () =>
      rt.client.readContract({
        address: rt.contracts.GatewayVault!,
        abi: GatewayVault.abi,
        functionName: "isSettler",
        args: [relayer],
      });
    await svc.deps.chain.send({
      profile: "testnet",
      from: "operator",
      to: rt.contracts.GatewayVault!,
      data: encodeFunctionData({
        abi: GatewayVault.abi,
        functionName: "setSettlers",
        args: [[relayer], false],
      }),
      intentKey: `test:unsettle:${crypto.randomUUID()}`,
    });
    assert.equal(await settler(), false);
    const again = await run("contracts-deploy.ts", "--network", "testnet");
    assert.equal(again.code, 0, again.err);
    assert.match(again.out, /^Every contract is already deployed on testnet\.$/m);
    assert.match(
      again.out,
      /^The gateway vault 0x[0-9a-f]{40}: this deployment's \d+ relayers may settle\.$/m,
    );
    assert.equal(await settler(), true);

    const status = await run("chain-status.ts");
    assert.equal(status.code, 0, status.err);
    assert.match(status.out, /testnet \(chain 5042002\) remote/);
    assert.match(status.out, /TestUSDC 0x[0-9a-f]{40}/);
    assert.match(status.out, /transactions: confirmed \d+/);
    // The RPC's credentials are not printed (an outside audit read a provider key in it).
    assert.match(status.out, /testnet \(chain 5042002\) remote http:\/\/127\.0\.0\.1:\d+\n/);

    // A database an earlier release migrated (its newest migration not applied here): an
    // operator command of this release refuses, rather than upgrading it under the old
    // release's running processes; nothing is migrated.
    const [newest] = await svc.db.sql<{ version: number; name: string; checksum: string }[]>`
      select version, name, checksum from schema_migrations order by version desc limit 1`;
    await svc.db.sql`delete from schema_migrations where version = ${newest.version}`;
    try {
      const older = await run("chain-status.ts");
      assert.equal(older.code, 1, older.out + older.err);
      assert.match(older.err, /The database is an earlier release's: 1 migration\(s\) of this one/);
      assert.match(older.err, /run `deno task migrate`/);
      assert.equal(older.out, "");
      const [still] = await svc.db.sql`
        select count(*)::int as n from schema_migrations where version = ${newest.version}`;
      assert.equal(still.n, 0);
    } finally {
      await svc.db.sql`insert into schema_migrations (version, name, checksum)
        values (${newest.version}, ${newest.name}, ${newest.checksum})`;
    }
  } finally {
    await svc.close();
  }
});

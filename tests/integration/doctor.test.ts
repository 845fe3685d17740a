/**
 * `deno task doctor` as an operator runs it (a child process): a deliberately broken production
 * configuration fails with one clear line and a fix per broken item; a sound one passes.
 */
import assert from "node:assert/strict";
import { freePort, startTestService } from "../helpers/service.ts";
import { ANVIL_KEYS, startAnvil } from "../helpers/anvil.ts";
import { startSmtp } from "../helpers/smtp.ts";
import { rpc } from "../helpers/chain.ts";
import { encodeFunctionData, toHex } from "viem";
import { GatewayVault, PaymentRouter } from "../../src/chain/contracts/artifacts/index.ts";
import { deriveRelayers } from "../../src/chain/relayers.ts";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { Chain } from "../../src/chain/index.ts";
import { MasterKeyMismatchError } from "../../src/chain/errors.ts";

async function doctor(env: Record<string, string>) {
  const dataDir = Deno.makeTempDirSync({ prefix: "doctor-" });
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", new URL("../../src/cli/doctor.ts", import.meta.url).pathname],
    env: { DATA_DIR: dataDir, ...env },
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  await Deno.remove(dataDir, { recursive: true }).catch(() => {});
  return {
    code: out.code,
    text: new TextDecoder().decode(out.stdout),
    err: new TextDecoder().decode(out.stderr),
  };
}

/** The line of a failed check and the fix printed under it. */
function failed(text: string, name: string): { line: string; fix: string } {
  const lines = text.split("\n");
  const i = lines.findIndex((l) => l.startsWith(`FAIL  ${name}:`));
  assert.ok(i >= 0, `no FAIL line for "${name}" in:\n${text}`);
  assert.match(lines[i + 1] ?? "", /^ {7}fix: \S/, `no fix under "${name}"`);
  return { line: lines[i], fix: lines[i + 1] };
}

Deno.test("doctor: a broken production configuration fails with one line and a fix per item", async () => {
  const anvil = await startAnvil({ chainId: 5042002 });
  try {
    const closed = freePort();
    const r = await doctor({
      APP_ENV: "production",
      BASE_URL: "http://pay.example.com",
      WALLET_MASTER_KEY: "22".repeat(32),
      SMTP_URL: `smtp://127.0.0.1:${freePort()}`,
      DATABASE_URL: `postgres://postgres@127.0.0.1:${closed}/nothing`,
      CHAINS: "testnet,production",
      // A node of the right chain without our contracts, and an operator with no gas.
      TESTNET_RPC_URL: anvil.rpcUrl,
      TESTNET_OPERATOR_KEY: `0x${"3".repeat(64)}`,
      // The same node for production: the wrong chain id.
      PRODUCTION_RPC_URL: anvil.rpcUrl,
      PRODUCTION_OPERATOR_KEY: ANVIL_KEYS[0],
    });
    assert.equal(r.code, 1, r.text + r.err);
    assert.match(
      failed(r.text, "configuration: JWT_SECRET").line,
      /required when APP_ENV=production/,
    );
    // The variable named once, by the check (it was said twice: `JWT_SECRET: JWT_SECRET: …`).
    assert.match(r.text, /^FAIL {2}configuration: JWT_SECRET: required when/m);
    assert.match(failed(r.text, "BASE_URL is https").line, /http:\/\/pay\.example\.com/);
    assert.match(failed(r.text, "secret METRICS_TOKEN").fix, /METRICS_TOKEN/);
    assert.match(failed(r.text, "database reachable").fix, /DATABASE_URL/);
    assert.match(failed(r.text, "testnet: contract TestUSDC").line, /no address/);
    // In production `deploy` deploys no test token: the fix is the chain's USDC by address.
    assert.match(failed(r.text, "testnet: contract TestUSDC").fix, /set TESTNET_USDC_ADDRESS/);
    assert.doesNotMatch(failed(r.text, "testnet: contract TestUSDC").fix, /contracts:deploy/);
    assert.match(failed(r.text, "testnet: contract PaymentRouter").fix, /contracts:deploy/);
    assert.match(failed(r.text, "testnet: operator funded").line, /holds 0 /);
    assert.match(
      failed(r.text, "production: chain id").line,
      /serves chain 5042002, expected 5042/,
    );
    assert.match(failed(r.text, "SMTP accepts a connection").fix, /SMTP_URL/);
    // Development secrets: the same refusal the service applies at start, one line each.
    assert.match(failed(r.text, "secret WALLET_MASTER_KEY").line, /one byte repeated/);
    assert.match(failed(r.text, "secret TESTNET_OPERATOR_KEY").line, /one byte repeated/);
    assert.match(
      failed(r.text, "secret PRODUCTION_OPERATOR_KEY").line,
      /anvil's well-known dev account 0/,
    );
    assert.match(failed(r.text, "secret PRODUCTION_OPERATOR_KEY").fix, /refuses to start/);
    assert.match(r.text, /\n\d+ check\(s\) failed: /);
    assert.ok(!/^ok {4}testnet: operator/m.test(r.text));
  } finally {
    await anvil.stop();
  }
});

Deno.test("doctor: a sound production configuration passes every check", async () => {
  const svc = await startTestService({ workers: false, serve: false });
  const smtp = await startSmtp();
  try {
    // Secrets of its own (production refuses development values), and an operator of its own
    // funded on each local chain.
    const operatorKey = generatePrivateKey();
    const env: Record<string, string> = {
      APP_ENV: "production",
      BASE_URL: "https://pay.example.com",
      JWT_SECRET: generatePrivateKey().slice(2),
      WALLET_MASTER_KEY: generatePrivateKey().slice(2),
      METRICS_TOKEN: generatePrivateKey().slice(2),
      SMTP_URL: smtp.url,
      DATABASE_URL: svc.databaseUrl,
    };
    for (const p of svc.deps.chain.profiles()) {
      const rt = svc.deps.chain.runtime(p);
      env[`${rt.profile.envPrefix}_RPC_URL`] = rt.rpcUrl;
      env[`${rt.profile.envPrefix}_OPERATOR_KEY`] = operatorKey;
      await rpc(rt.rpcUrl, "anvil_setBalance", [
        privateKeyToAccount(operatorKey).address,
        toHex(10n ** 20n),
      ]);
    }
    // Its relayers (derived from its key) are not the vault's settlers yet: the vault would
    // refuse every settlement they send.
    const unnamed = await doctor(env);
    assert.notEqual(unnamed.code, 0);
    assert.match(unnamed.text, /^FAIL {2}testnet: gateway vault settlers: relayers that may not/m);
    // Its USDC is our test token, deployed here and recorded: in production a configured chain's
    // USDC is the chain's own, named by address.
    assert.match(
      unnamed.text,
      new RegExp(
        "^FAIL {2}testnet: contract TestUSDC: 0x[0-9a-fA-F]{40} is our test token, deployed " +
          "here .*\\n {7}fix: set TESTNET_USDC_ADDRESS to the chain's USDC",
        "m",
      ),
    );
    // The deployment's operator signs the router's orders, not this one (M2 of the 2026-12-01
    // audit: every check passed and every checkout relay reverted).
    assert.match(
      unnamed.text,
      /^FAIL {2}testnet: payment router's order signer: 0x[0-9a-fA-F]{40}, not the operator /m,
    );
    // Named by address (here the same token stands for the chain's USDC).
    for (const p of svc.deps.chain.profiles()) {
      const rt = svc.deps.chain.runtime(p);
      env[`${rt.profile.envPrefix}_USDC_ADDRESS`] = rt.contracts.TestUSDC!;
    }
    // The vault's operator names them (as the service's start or contracts:deploy does), and the
    // router's owner makes this operator the order signer (else every checkout order is refused).
    for (const p of svc.deps.chain.profiles()) {
      const rt = svc.deps.chain.runtime(p);
      const calls = [
        [
          "settlers",
          rt.contracts.GatewayVault!,
          encodeFunctionData({
            abi: GatewayVault.abi,
            functionName: "setSettlers",
            args: [deriveRelayers(operatorKey, 4).map((a) => a.address), true],
          }),
        ],
        [
          "order-signer",
          rt.contracts.PaymentRouter!,
          encodeFunctionData({
            abi: PaymentRouter.abi,
            functionName: "setOrderSigner",
            args: [privateKeyToAccount(operatorKey).address],
          }),
        ],
      ] as const;
      for (const [what, to, data] of calls) {
        await svc.deps.chain.send({
          profile: p,
          from: "operator",
          to,
          data,
          intentKey: `test:doctor-${what}:${p}`,
        });
      }
    }
    const r = await doctor(env);
    assert.equal(r.code, 0, r.text + r.err);
    assert.ok(!/^FAIL/m.test(r.text), r.text);
    for (const p of ["testnet", "production"]) {
      assert.match(
        r.text,
        new RegExp(`^ok {4}${p}: payment router's order signer: the operator`, "m"),
      );
      assert.match(r.text, new RegExp(`^ok {4}${p}: gateway vault settlers: the 4 relayers`, "m"));
      assert.match(
        r.text,
        new RegExp(
          `^ok {4}${p}: contract EscrowVault: 0x[0-9a-fA-F]{40}, built from our artifact`,
          "m",
        ),
      );
      assert.match(r.text, new RegExp(`^ok {4}${p}: operator funded`, "m"));
      // The test service's vaults were deployed on its own local nodes: no delay, so x402's
      // batched option is off once they are configured chains; said, not failed.
      assert.match(
        r.text,
        new RegExp(
          `^warn  ${p}: gateway vault withdrawal delay: 0 s on 0x[0-9a-fA-F]{40}: x402's batched ` +
            `option needs 160 s, so it is not offered on this chain\n {7}fix: .*` +
            `${p.toUpperCase()}_GATEWAY_WITHDRAWAL_DELAY_SECONDS`,
          "m",
        ),
      );
    }
    assert.match(r.text, /^ok {4}database migrated: all applied/m);
    assert.match(r.text, /^ok {4}SMTP accepts a connection/m);
  } finally {
    await smtp.close();
    await svc.close();
  }
});

Deno.test("doctor: development defaults are reported as not checked, not as passed", async () => {
  const r = await doctor({ APP_ENV: "development" });
  assert.equal(r.code, 0, r.text + r.err);
  assert.match(r.text, /^warn {2}database: DATABASE_URL not set/m);
  assert.doesNotMatch(r.text, /checks passed/);
  assert.match(r.text, /\nnothing failed, but only \d+ of \d+ checks ran against a real setting; /);
  assert.match(r.text, /use development defaults \(warn\) and were not checked: .*database/);
});

Deno.test("a wallet master key that does not open the database's wallets: doctor fails, a start refuses", async () => {
  const svc = await startTestService({ workers: false, serve: false });
  try {
    await svc.deps.chain.createWallet("merchant");
    const own = svc.deps.config.WALLET_MASTER_KEY!;
    const other = generatePrivateKey().slice(2);
    const env = { APP_ENV: "development", DATABASE_URL: svc.databaseUrl, CHAINS: "testnet" };
    const good = await doctor({ ...env, WALLET_MASTER_KEY: own });
    assert.match(good.text, /^ok {4}WALLET_MASTER_KEY opens the wallets: /m);
    const bad = await doctor({ ...env, WALLET_MASTER_KEY: other });
    assert.notEqual(bad.code, 0);
    assert.match(
      failed(bad.text, "WALLET_MASTER_KEY opens the wallets").line,
      /does not open the managed wallets' keys/,
    );
    // The chain module (every role's start, every operator command) refuses before starting.
    await assert.rejects(
      () =>
        Chain.start({
          config: svc.deps.config.chain,
          masterKey: other,
          sql: svc.db.sql,
          log: svc.deps.log,
        }),
      MasterKeyMismatchError,
    );
  } finally {
    await svc.close();
  }
});

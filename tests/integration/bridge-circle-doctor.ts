/**
 * Steps of the Circle suite (bridge-circle.test.ts): `deno task doctor` against Circle's
 * contracts as configured: every CCTP check passes; a configuration naming a deployment of the
 * wrong domain that no one linked fails with one line and a fix per problem.
 */
import assert from "node:assert/strict";
import type { TestService } from "../helpers/service.ts";
import { type Anvil, ANVIL_KEYS } from "../helpers/anvil.ts";
import { type CircleDeployment, circleEnv, deployCircle, ROLES } from "../helpers/circle-cctp.ts";

async function doctor(env: Record<string, string>) {
  const dataDir = Deno.makeTempDirSync({ prefix: "doctor-circle-" });
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
    text: new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr),
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

export async function doctorSteps(
  t: Deno.TestContext,
  ctx: {
    A: CircleDeployment;
    B: CircleDeployment;
    env: Record<string, string>;
    svc: TestService;
    baseNode: Anvil;
  },
) {
  const { PORT: _port, RATE_LIMITS: _r, ...chains } = ctx.env;
  const base = {
    APP_ENV: "development",
    LOG_LEVEL: "error",
    DATABASE_URL: ctx.svc.db.url,
    JWT_SECRET: "test-jwt-secret-0123456789abcdef0123456789",
    WALLET_MASTER_KEY: "11".repeat(32),
    ...chains,
  };

  await t.step("doctor: Circle's contracts as configured pass every CCTP check", async () => {
    const r = await doctor(base);
    assert.equal(r.code, 0, r.text);
    for (
      const line of [
        "testnet: contract TokenMessengerV2: 0x[0-9a-fA-F]{40} \\(configured\\): code present",
        // Circle's USDC, named by address: not called our TestUSDC.
        "testnet: contract USDC: 0x[0-9a-fA-F]{40} \\(configured\\): code present",
        "Base_Sepolia: RPC answers: chain 84532",
        "testnet: CCTP transmitter domain: .* is domain 26, testnet is domain 26",
        "Base_Sepolia: CCTP transmitter domain: .* is domain 6",
        "testnet: CCTP link to Base_Sepolia",
        "Base_Sepolia: CCTP link to testnet",
        "testnet: CCTP token pair with Base_Sepolia",
        "Base_Sepolia: CCTP token pair with testnet",
        "Base_Sepolia: CCTP attestations: .* answered 200",
        // Ours beside Circle's (bridge-circle-shopper.ts deployed it as contracts:deploy does).
        "Base_Sepolia: contract CheckoutBurner: 0x[0-9a-fA-F]{40}, built from our artifact",
      ]
    ) assert.match(r.text, new RegExp(`^ok {4}${line}`, "m"), line);
    assert.doesNotMatch(r.text, /contracts:deploy[^\n]*record/);
  });

  await t.step(
    "doctor: a transmitter of the wrong domain, unlinked: FAIL lines with fixes",
    async () => {
      // Circle's contracts again on the Base_Sepolia node, but for domain 3 and linked to nothing.
      const stray = await deployCircle(ctx.baseNode.rpcUrl, {
        domain: 3,
        attesters: ROLES.attesterKeys,
        threshold: 2,
      });
      const r = await doctor({
        ...base,
        ...circleEnv("BASE_SEPOLIA", stray),
        // And no attestation API, only a key these transmitters do not trust.
        CCTP_ATTESTATION_API_URL: "",
        CCTP_ATTESTER_KEYS: ANVIL_KEYS[3],
      });
      assert.equal(r.code, 1, r.text);
      const domain = failed(r.text, "Base_Sepolia: CCTP transmitter domain");
      assert.match(domain.line, /is domain 3, Base_Sepolia is domain 6/);
      assert.match(
        domain.fix,
        /BASE_SEPOLIA_MESSAGE_TRANSMITTER_ADDRESS .*chain 84532 \(domain 6\)/,
      );
      const link = failed(r.text, "testnet: CCTP link to Base_Sepolia");
      assert.match(
        link.fix,
        /TESTNET_TOKEN_MESSENGER_ADDRESS and BASE_SEPOLIA_TOKEN_MESSENGER_ADDRESS/,
      );
      failed(r.text, "Base_Sepolia: CCTP link to testnet");
      assert.match(
        failed(r.text, "testnet: CCTP token pair with Base_Sepolia").fix,
        /USDC_ADDRESS/,
      );
      const attest = failed(r.text, "Base_Sepolia: CCTP attestations");
      assert.match(
        attest.line,
        /local attester holds 0 of this transmitter's attesters, it needs 2/,
      );
      assert.match(attest.fix, /CCTP_ATTESTATION_API_URL/);
    },
  );
}

/**
 * Chain: USDC transfers per second on a local anvil through our sender (intent, nonce lock,
 * bookkeeping, receipt polling), sequential and pipelined, against raw viem sendTransaction
 * without bookkeeping as the baseline.
 */
import { createWalletClient, encodeFunctionData, type Hex, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { createTestDatabase } from "../tests/helpers/db.ts";
import { startTestChain } from "../tests/helpers/chain.ts";
import { ANVIL_KEYS } from "../tests/helpers/anvil.ts";
import { TestUSDC } from "../src/chain/contracts/artifacts/index.ts";
import { measure, row } from "./report.ts";

const N = Number(Deno.env.get("BENCH_TRANSFERS") ?? "200");
const USDC = 1_000_000n;

export async function run() {
  const db = await createTestDatabase();
  const chain = await startTestChain(db.sql);
  try {
    const rt = chain.runtime("testnet");
    const usdc = chain.contract("testnet", "TestUSDC");
    const ours = await chain.createWallet("test");
    // The baseline signs with one of anvil's funded dev accounts, outside our keystore.
    const rawAccount = privateKeyToAccount(ANVIL_KEYS[1]);
    const to = (await chain.createWallet("test")).address;
    await chain.grantGas("testnet", ours.address, 10n ** 19n);
    for (const address of [ours.address, rawAccount.address]) {
      await chain.mintUsdc({ profile: "testnet", to: address, amount: 1_000_000n * USDC });
    }
    const data = encodeFunctionData({
      abi: TestUSDC.abi,
      functionName: "transfer",
      args: [to, USDC],
    });

    // Baseline: viem wallet client, local account, explicit nonces, no database.
    const wallet = createWalletClient({
      account: rawAccount,
      chain: rt.viemChain,
      transport: http(rt.rpcUrl),
    });
    let nonce = await rt.client.getTransactionCount({ address: rawAccount.address });
    const gas = 60_000n;
    const waitAll = async (hashes: Hex[]) => {
      for (const h of hashes) {
        while (!(await rt.client.getTransactionReceipt({ hash: h }).catch(() => null))) {
          await new Promise((r) => setTimeout(r, 5));
        }
      }
    };
    const rawSeq = await measure("raw viem sendTransaction, sequential", N, async () => {
      for (let i = 0; i < N; i++) {
        const h = await wallet.sendTransaction({ to: usdc, data, gas, nonce: nonce++ });
        await waitAll([h]);
      }
    });
    const rawPipe = await measure("raw viem sendTransaction, pipelined", N, async () => {
      const hashes = await Promise.all(
        Array.from(
          { length: N },
          () => wallet.sendTransaction({ to: usdc, data, gas, nonce: nonce++ }),
        ),
      );
      await waitAll(hashes);
    });

    const send = (i: number, tag: string) =>
      chain.send({
        profile: "testnet",
        from: { walletId: ours.id },
        to: usdc,
        data,
        gas,
        intentKey: `bench:${tag}:${i}`,
      });
    const seq = await measure("our sender, sequential (send + wait)", N, async () => {
      for (let i = 0; i < N; i++) await send(i, "seq");
    });
    const pipe = await measure("our sender, pipelined (all in flight)", N, async () => {
      await Promise.all(Array.from({ length: N }, (_, i) => send(i, "pipe")));
    });

    console.log(row(rawSeq));
    console.log(row(seq, rawSeq));
    console.log(row(rawPipe));
    console.log(row(pipe, rawPipe));
  } finally {
    await chain.stop();
    await db.drop();
  }
}

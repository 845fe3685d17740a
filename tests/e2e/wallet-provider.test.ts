/**
 * The injected test wallet (tests/helpers/wallet-provider.ts) as a page sees it: accounts and
 * connection, chain switching (4902, add, chainChanged), signatures that verify, a transaction
 * mined on a local node, user rejections (4001), RPC reads, EIP-6963.
 */
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { createPublicClient, type Hex, http, verifyMessage, verifyTypedData } from "viem";
import { ANVIL_KEYS, startAnvil } from "../helpers/anvil.ts";
import { waitFor } from "../helpers/poll.ts";
import { browserTest, launchBrowser } from "../helpers/browser.ts";
import { installWallet, normaliseChainId } from "../helpers/wallet-provider.ts";

type Outcome = { result?: unknown; error?: { code: number; message: string; isError: boolean } };

function requester(page: Page) {
  return (method: string, params?: unknown): Promise<Outcome> =>
    page.evaluate(async ([m, p]) => {
      const g = globalThis as unknown as {
        ethereum: { request(a: { method: string; params?: unknown }): Promise<unknown> };
      };
      try {
        return { result: await g.ethereum.request({ method: m, params: p }) };
      } catch (e) {
        const err = e as { code: number; message: string };
        return { error: { code: err.code, message: err.message, isError: e instanceof Error } };
      }
    }, [method, params] as const);
}

const TYPED = {
  types: {
    EIP712Domain: [
      { name: "name", type: "string" },
      { name: "version", type: "string" },
      { name: "chainId", type: "uint256" },
    ],
    Order: [{ name: "reference", type: "string" }, { name: "amount", type: "uint256" }],
  },
  primaryType: "Order",
  message: { reference: "pay_1", amount: "1500000" },
};

Deno.test(browserTest("the injected EIP-1193 test wallet", async (t) => {
  const home = await startAnvil({ chainId: 31337 });
  const other = await startAnvil({ chainId: 1337 });
  const site = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () =>
      new Response("<!DOCTYPE html><title>site</title><p>hi</p>", {
        headers: { "content-type": "text/html" },
      }),
  );
  const browser = await launchBrowser();
  try {
    const page = await browser.newPage();
    const HOME = normaliseChainId(31337);
    const OTHER = normaliseChainId(1337);
    // Starts on a chain the wallet knows but the "site" does not want: the other one.
    const wallet = await installWallet(page, {
      privateKey: ANVIL_KEYS[3],
      chains: { [OTHER]: other.rpcUrl },
      initialChainId: OTHER,
      reject: ["eth_signTypedData_v3"],
    });
    await page.goto(`http://127.0.0.1:${site.addr.port}/`);
    const request = requester(page);
    await page.evaluate(() => {
      const g = globalThis as unknown as {
        ethereum: { on(e: string, f: (d: unknown) => void): void };
        seen: unknown[];
        announced: unknown[];
      };
      g.seen = [];
      g.ethereum.on("chainChanged", (d) => g.seen.push(["chainChanged", d]));
      g.ethereum.on("accountsChanged", (d) => g.seen.push(["accountsChanged", d]));
      g.announced = [];
      globalThis.addEventListener("eip6963:announceProvider", (e) => {
        const d = (e as CustomEvent).detail;
        g.announced.push(d.info.rdns);
      });
      globalThis.dispatchEvent(new Event("eip6963:requestProvider"));
    });
    const seen = () => page.evaluate("globalThis.seen") as Promise<unknown[]>;

    await t.step("a provider that is not MetaMask, announced by EIP-6963", async () => {
      assert.equal(await page.evaluate("globalThis.ethereum.isMetaMask"), false);
      assert.deepEqual(await page.evaluate("globalThis.announced"), ["org.example.testwallet"]);
    });

    await t.step("accounts only after the user connects", async () => {
      assert.deepEqual(await request("eth_accounts"), { result: [] });
      const signBefore = await request("personal_sign", ["0x68690a", wallet.address]);
      assert.equal(signBefore.error?.code, 4100);
      assert.deepEqual(await request("eth_requestAccounts"), { result: [wallet.address] });
      assert.deepEqual(await request("eth_accounts"), { result: [wallet.address] });
      assert.deepEqual(await seen(), [["accountsChanged", [wallet.address]]]);
    });

    await t.step("switching to an unknown chain is 4902; after adding it, it works", async () => {
      assert.deepEqual(await request("eth_chainId"), { result: OTHER });
      const unknown = await request("wallet_switchEthereumChain", [{ chainId: HOME }]);
      assert.equal(unknown.error?.code, 4902);
      assert.equal(unknown.error?.isError, true, "errors are Error objects with a code");
      const added = await request("wallet_addEthereumChain", [{
        chainId: HOME,
        chainName: "Home",
        rpcUrls: [home.rpcUrl],
        nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
      }]);
      assert.deepEqual(added, { result: null });
      assert.deepEqual(await request("eth_chainId"), { result: OTHER }, "adding does not switch");
      assert.deepEqual(await request("wallet_switchEthereumChain", [{ chainId: HOME }]), {
        result: null,
      });
      assert.deepEqual(await request("eth_chainId"), { result: HOME });
      assert.equal(await page.evaluate("globalThis.ethereum.chainId"), HOME);
      assert.deepEqual((await seen()).at(-1), ["chainChanged", HOME]);
      assert.equal(wallet.chainId(), HOME);
    });

    await t.step("personal_sign and eth_signTypedData_v4 signatures verify", async () => {
      const message = "Sign in to site\nnonce: 42";
      const hex = `0x${
        Array.from(new TextEncoder().encode(message), (b) => b.toString(16).padStart(2, "0"))
          .join("")
      }`;
      const signed = await request("personal_sign", [hex, wallet.address]);
      assert.ok(
        await verifyMessage({ address: wallet.address, message, signature: signed.result as Hex }),
      );
      const typed = { ...TYPED, domain: { name: "Site", version: "1", chainId: 31337 } };
      const sig = await request("eth_signTypedData_v4", [wallet.address, JSON.stringify(typed)]);
      const { EIP712Domain: _, ...types } = TYPED.types;
      assert.ok(
        await verifyTypedData({
          address: wallet.address,
          domain: typed.domain,
          types,
          primaryType: "Order",
          message: { reference: "pay_1", amount: 1_500_000n },
          signature: sig.result as Hex,
        }),
      );
      const wrongChain = { ...TYPED, domain: { name: "Site", version: "1", chainId: 1337 } };
      const refused = await request("eth_signTypedData_v4", [
        wallet.address,
        JSON.stringify(wrongChain),
      ]);
      assert.equal(refused.error?.code, -32602);
      assert.match(refused.error!.message, /must match the active chainId/);
    });

    await t.step("eth_sendTransaction is mined on the current chain", async () => {
      const to = "0x000000000000000000000000000000000000dEaD";
      const sent = await request("eth_sendTransaction", [{
        from: wallet.address,
        to,
        value: "0x2386f26fc10000", // 0.01 ETH
      }]);
      assert.match(String(sent.result), /^0x[0-9a-f]{64}$/);
      const client = createPublicClient({ transport: http(home.rpcUrl) });
      // Automining answers the hash before the block is there under load: poll with a bound.
      const receipt = await waitFor(
        () => client.getTransactionReceipt({ hash: sent.result as Hex }).catch(() => null),
        { what: "the transaction's receipt" },
      );
      assert.equal(receipt.status, "success");
      assert.equal(receipt.from.toLowerCase(), wallet.address.toLowerCase());
      // Reads go to the same node.
      const balance = await request("eth_getBalance", [to, "latest"]);
      assert.equal(BigInt(balance.result as string), 10_000_000_000_000_000n);
      const unsupported = await request("eth_sign", [wallet.address, "0x00"]);
      assert.equal(unsupported.error?.code, 4200);
    });

    await t.step("the user rejects: 4001, once or always", async () => {
      wallet.rejectNext("eth_sendTransaction");
      const no = await request("eth_sendTransaction", [{
        from: wallet.address,
        to: wallet.address,
      }]);
      assert.deepEqual(no.error, {
        code: 4001,
        message: "User rejected the request.",
        isError: true,
      });
      const always = await request("eth_signTypedData_v3", []);
      assert.equal(always.error?.code, 4001);
      wallet.reject("personal_sign");
      assert.equal((await request("personal_sign", ["0x00", wallet.address])).error?.code, 4001);
      assert.equal((await request("personal_sign", ["0x00", wallet.address])).error?.code, 4001);
      wallet.reject("personal_sign", false);
      assert.ok((await request("personal_sign", ["0x00", wallet.address])).result);
      assert.ok(wallet.requests.some((r) => r.method === "eth_requestAccounts"));
    });

    await t.step(
      "the wallet switches or disconnects on its own; a reload keeps its state",
      async () => {
        await wallet.switchChain(OTHER);
        assert.deepEqual((await seen()).at(-1), ["chainChanged", OTHER]);
        await wallet.switchChain(HOME);
        await page.reload();
        // The page script was installed while the wallet was on OTHER; it catches up to HOME.
        await page.waitForFunction(`globalThis.ethereum?.chainId === ${JSON.stringify(HOME)}`);
        assert.deepEqual(await request("eth_accounts"), { result: [wallet.address] });
        await wallet.disconnect();
        assert.deepEqual(await request("eth_accounts"), { result: [] });
      },
    );
  } finally {
    await browser.close();
    await site.shutdown();
    await home.stop();
    await other.stop();
  }
}));

/**
 * A minimal block explorer for chains without a public one (the local nodes): the default
 * `{explorer_url}` of a local profile points here, so every explorerUrl the API returns opens.
 */
import { Hono } from "hono";
import type { Hex } from "viem";
import type { Deps } from "../deps.ts";
import { Layout } from "../../views/layout.tsx";
import { formatUsdc } from "../money.ts";
import { isSourceChain, type ProfileName } from "./profiles.ts";

export function explorerPages(deps: Deps): Hono {
  const app = new Hono();
  app.get("/explorer/:profile/tx/:hash", async (c) => {
    const profile = c.req.param("profile") as ProfileName;
    const hash = c.req.param("hash");
    // A bridge source chain (its burn links point here) may not have been started by this process.
    if (isSourceChain(profile) && /^0x[0-9a-fA-F]{64}$/.test(hash)) {
      await deps.chain.ensure(profile).catch(() => null);
    }
    if (!deps.chain.has(profile) || !/^0x[0-9a-fA-F]{64}$/.test(hash)) {
      return c.html(<Page title="Not found">Unknown chain or transaction hash.</Page>, 404);
    }
    const rt = deps.chain.runtime(profile);
    const receipt = await rt.client.getTransactionReceipt({ hash: hash as Hex }).catch(() => null);
    const tx = await rt.client.getTransaction({ hash: hash as Hex }).catch(() => null);
    if (!tx) {
      return c.html(
        <Page title="Transaction not found">No transaction {hash} on {rt.profile.label}.</Page>,
        404,
      );
    }
    const usdc = rt.contracts.TestUSDC?.toLowerCase();
    const transfers = (receipt?.logs ?? []).filter((l) =>
      l.address.toLowerCase() === usdc && l.topics.length === 3 &&
      l.topics[0] === "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"
    );
    return c.html(
      <Page title={`Transaction ${hash.slice(0, 10)}…`}>
        <dl>
          <dt>Chain</dt>
          <dd>{rt.profile.label} ({rt.chainId})</dd>
          <dt>Hash</dt>
          <dd>
            <code>{hash}</code>
          </dd>
          <dt>Status</dt>
          <dd>{receipt ? (receipt.status === "success" ? "Success" : "Reverted") : "Pending"}</dd>
          <dt>Block</dt>
          <dd>{receipt?.blockNumber?.toString() ?? "pending"}</dd>
          <dt>From</dt>
          <dd>
            <code>{tx.from}</code>
          </dd>
          <dt>To</dt>
          <dd>
            <code>{tx.to ?? receipt?.contractAddress ?? "(contract creation)"}</code>
          </dd>
          <dt>Gas used</dt>
          <dd>{receipt?.gasUsed?.toString() ?? "–"}</dd>
        </dl>
        {transfers.length > 0 && (
          <section>
            <h2>USDC transfers</h2>
            <ul>
              {transfers.map((l) => (
                <li>
                  {formatUsdc(BigInt(l.data))} USDC from{" "}
                  <code>{"0x" + l.topics[1]!.slice(26)}</code> to{" "}
                  <code>{"0x" + l.topics[2]!.slice(26)}</code>
                </li>
              ))}
            </ul>
          </section>
        )}
      </Page>,
    );
  });
  return app;
}

function Page(props: { title: string; children?: unknown }) {
  return (
    <Layout title={props.title}>
      <main style="font-family: system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; overflow-wrap: anywhere">
        <h1>{props.title}</h1>
        {props.children}
      </main>
    </Layout>
  );
}

/**
 * Our AgentReputationRegistry against the official ERC-8004 ReputationRegistryUpgradeable (2.0.0,
 * the test fixture behind its proxy), and each paired with the other implementation's identity
 * registry: the official reputation registry on our identity registry, ours on the official one.
 * The same feedback goes through all four pairs via the official ABI; every answer (value or
 * revert data) and every transaction's logs must equal the all-official pair's. Covers the
 * self-feedback check through `isAuthorizedOrOwner`, value bounds, per-client indices,
 * `getSummary` (client list required, 18-decimal average at the most common decimals),
 * `readAllFeedback`, revocation, responses and `getResponseCount` with its client list.
 */
import assert from "node:assert/strict";
import {
  type Abi,
  type Address,
  getAddress,
  type Hex,
  keccak256,
  toHex,
  type WalletClient,
  zeroAddress,
} from "viem";
import { generatePrivateKey } from "viem/accounts";
import {
  AgentIdentityRegistry,
  AgentReputationRegistry,
} from "../../src/chain/contracts/artifacts/index.ts";
import { ANVIL_KEYS, startAnvil } from "../helpers/anvil.ts";
import { anvilClients } from "../helpers/contract-kit.ts";
import {
  deployOfficialIdentity,
  deployOfficialReputation,
  differ,
  mined,
  OFFICIAL,
  type Outcome,
  reason,
} from "../helpers/erc8004.ts";

const idAbi = OFFICIAL.IdentityRegistry.abi;
const abi = OFFICIAL.ReputationRegistry.abi;

interface Pair {
  name: string;
  identity: Address;
  reputation: Address;
}

Deno.test("ERC-8004 reputation: ours and the official one, in all four pairings", async (t) => {
  const anvil = await startAnvil();
  try {
    const { pub, wallet, testClient } = anvilClients(anvil);
    const [deployer, alice, bob, carol] = ANVIL_KEYS.map((k) => wallet(k));
    const clients = [generatePrivateKey(), generatePrivateKey(), generatePrivateKey()].map((k) =>
      wallet(k)
    );
    for (const c of clients) {
      await testClient.setBalance({ address: c.account!.address, value: 10n ** 20n });
    }
    const [c1, c2, c3] = clients;
    const who = (w: WalletClient) => w.account!.address;
    const deployOurs = async (c: { abi: Abi; bytecode: Hex }, args: unknown[] = []) =>
      getAddress((await mined(pub, deployer.deployContract({ ...c, args }))).contractAddress!);

    const officialId = await deployOfficialIdentity(pub, deployer);
    const ourId = await deployOurs(AgentIdentityRegistry);
    const pairs: Pair[] = [
      {
        name: "official × official",
        identity: officialId,
        reputation: await deployOfficialReputation(pub, deployer, officialId),
      },
      {
        name: "ours × ours",
        identity: ourId,
        reputation: await deployOurs(
          AgentReputationRegistry,
          [ourId],
        ),
      },
      {
        name: "official reputation × our identity",
        identity: ourId,
        reputation: await deployOfficialReputation(pub, deployer, ourId),
      },
      {
        name: "our reputation × official identity",
        identity: officialId,
        reputation: await deployOurs(
          AgentReputationRegistry,
          [officialId],
        ),
      },
    ];
    const roles: Record<string, string> = {};
    for (const p of pairs) {
      roles[p.identity.toLowerCase()] = "identity";
      roles[p.reputation.toLowerCase()] = "reputation";
    }
    const d = differ(pub, roles);
    /** Runs `f` on every pair; each must answer as the all-official pair does. */
    const all = async (label: string, f: (p: Pair) => Promise<Outcome>) => {
      const expected = await f(pairs[0]);
      for (const p of pairs.slice(1)) {
        assert.deepEqual(await f(p), expected, `${label} (${p.name})`);
      }
      return expected;
    };
    const write = (w: WalletClient, fn: string, args: unknown[]) => (p: Pair) =>
      d.write(w, p.reputation, abi, fn, args);
    const read = (fn: string, args: unknown[]) => (p: Pair) => d.read(p.reputation, abi, fn, args);
    const feedback = (
      w: WalletClient,
      agentId: bigint,
      value: bigint,
      decimals: number,
      tag1 = "x402",
      tag2 = "",
    ) =>
      write(w, "giveFeedback", [
        agentId,
        value,
        decimals,
        tag1,
        tag2,
        "/x402/quote",
        "ipfs://f",
        keccak256(toHex(`${value}`)),
      ]);
    const failed = (o: Outcome, text: string) =>
      assert.deepEqual(o, { ok: false, revert: reason(text) });

    // The same agents on both identity registries: alice owns 0 and 1, bob 2; carol is approved for 0.
    for (const identity of [officialId, ourId]) {
      for (const w of [alice, alice, bob]) {
        await mined(
          pub,
          w.writeContract({
            address: identity,
            abi: idAbi,
            functionName: "register",
            args: ["ipfs://agent"],
            account: w.account!,
            chain: w.chain,
          }),
        );
      }
      await mined(
        pub,
        alice.writeContract({
          address: identity,
          abi: idAbi,
          functionName: "approve",
          args: [who(carol), 0n],
          account: alice.account!,
          chain: alice.chain,
        }),
      );
    }

    await t.step(
      "refused: self-feedback (owner, approved), unknown agent, out-of-range values",
      async () => {
        failed(await all("owner", feedback(alice, 0n, 100n, 0)), "Self-feedback not allowed");
        failed(await all("approved", feedback(carol, 0n, 100n, 0)), "Self-feedback not allowed");
        assert.deepEqual(await all("unknown agent", feedback(c1, 99n, 1n, 0)), {
          ok: false,
          revert: `0x7e273289${"0".repeat(62)}63`,
        });
        failed(await all("decimals", feedback(c1, 0n, 1n, 19)), "too many decimals");
        failed(await all("too large", feedback(c1, 0n, 10n ** 38n + 1n, 0)), "value too large");
        failed(await all("too small", feedback(c1, 0n, -(10n ** 38n) - 1n, 0)), "value too large");
      },
    );

    await t.step("feedback: per-client indices from 1, the same NewFeedback", async () => {
      const entries: [WalletClient, bigint, bigint, number, string, string][] = [
        [c1, 0n, 100n, 0, "x402", "success"],
        [c1, 0n, 0n, 0, "x402", "failed"],
        [c2, 0n, 995n, 1, "x402", ""],
        [c2, 0n, 9950n, 2, "quality", ""],
        [c3, 0n, -15n, 1, "x402", "success"],
        [c3, 0n, 1n, 2, "", ""],
        [c3, 0n, -1n, 0, "x402", "failed"],
        [c1, 1n, 7n, 18, "x402", ""],
        [c2, 1n, 10n ** 38n, 0, "x402", ""],
        [c2, 1n, -(10n ** 38n), 0, "x402", ""],
        [bob, 0n, 42n, 0, "x402", "success"],
        [c1, 2n, -3n, 0, "x402", "failed"],
      ];
      for (const [w, id, value, dec, t1, t2] of entries) {
        const o = await all(`feedback ${value}`, feedback(w, id, value, dec, t1, t2));
        assert.equal(o.ok, true);
      }
    });

    const subsets: Address[][] = [
      [who(c1)],
      [who(c2)],
      [who(c3)],
      [who(c1), who(c2)],
      [who(c1), who(c2), who(c3), who(bob)],
      [who(c3), who(c3)],
      [who(alice)],
    ];
    const tags: [string, string][] = [["", ""], ["x402", ""], ["x402", "failed"], ["", "success"], [
      "quality",
      "",
    ], ["none", ""]];
    const summaries = async (label: string) => {
      for (const id of [0n, 1n, 2n, 99n]) {
        failed(
          await all(`${label} summary [] ${id}`, read("getSummary", [id, [], "", ""])),
          "clientAddresses required",
        );
        for (const s of subsets) {
          for (const [t1, t2] of tags) {
            await all(
              `${label} summary ${id} ${s.length} ${t1}/${t2}`,
              read("getSummary", [id, s, t1, t2]),
            );
          }
        }
      }
    };

    await t.step(
      "getSummary: a client list is required; averages at the most common decimals",
      async () => {
        await summaries("before revocation");
        const s = await all("c1", read("getSummary", [0n, [who(c1)], "x402", ""]));
        assert.deepEqual(s, { ok: true, value: ["2n", "50n", 0] });
        const mixed = await all("c2", read("getSummary", [0n, [who(c2)], "", ""]));
        assert.deepEqual(
          mixed,
          { ok: true, value: ["2n", "995n", 1] },
          "99.5 at 1 decimal (tie: lowest)",
        );
      },
    );

    await t.step("readAllFeedback, readFeedback, getLastIndex, getClients", async () => {
      for (const id of [0n, 1n, 99n]) {
        for (const s of [[], [who(c3)], [who(c1), who(c2)]]) {
          for (const [t1, t2] of tags) {
            for (const revoked of [false, true]) {
              await all(`readAll ${id}`, read("readAllFeedback", [id, s, t1, t2, revoked]));
            }
          }
        }
        await all(`clients ${id}`, read("getClients", [id]));
        for (const c of [c1, c2, c3, alice]) {
          await all(`last ${id}`, read("getLastIndex", [id, who(c)]));
          for (const i of [0n, 1n, 2n, 3n]) {
            await all(`read ${id}/${i}`, read("readFeedback", [id, who(c), i]));
          }
        }
      }
    });

    await t.step("revocation: by the client, once; summaries and reads follow", async () => {
      failed(await all("index 0", write(c1, "revokeFeedback", [0n, 0n])), "index must be > 0");
      failed(
        await all("out of bounds", write(c1, "revokeFeedback", [0n, 3n])),
        "index out of bounds",
      );
      failed(
        await all("not the client's", write(c3, "revokeFeedback", [1n, 1n])),
        "index out of bounds",
      );
      await all("revoke", write(c1, "revokeFeedback", [0n, 2n]));
      failed(await all("again", write(c1, "revokeFeedback", [0n, 2n])), "Already revoked");
      await all("revoke c3", write(c3, "revokeFeedback", [0n, 1n]));
      await summaries("after revocation");
      await all("read revoked", read("readFeedback", [0n, who(c1), 2n]));
      await all("readAll revoked", read("readAllFeedback", [0n, [], "", "", true]));
      await all("readAll live", read("readAllFeedback", [0n, [], "", "", false]));
    });

    await t.step(
      "responses: anyone appends; getResponseCount by client, index, responders",
      async () => {
        const respond = (
          w: WalletClient,
          client: WalletClient,
          index: bigint,
          uri = "ipfs://r",
          agentId = 0n,
        ) => write(w, "appendResponse", [agentId, who(client), index, uri, keccak256(toHex(uri))]);
        failed(await all("index 0", respond(alice, c1, 0n, "")), "index must be > 0");
        failed(await all("empty", respond(alice, c1, 5n, "")), "Empty URI");
        failed(await all("oob", respond(alice, c1, 5n)), "index out of bounds");
        failed(
          await all("unknown agent", respond(alice, c1, 1n, "ipfs://r", 99n)),
          "index out of bounds",
        );
        for (
          const [w, c, i] of [[alice, c1, 1n], [alice, c1, 1n], [bob, c1, 1n], [bob, c1, 2n], [
            c3,
            c2,
            1n,
          ], [alice, c3, 3n]] as const
        ) {
          await all("respond", respond(w, c, i));
        }
        for (const client of [zeroAddress, who(c1), who(c2), who(c3)]) {
          for (const i of [0n, 1n, 2n, 9n]) {
            for (const rs of [[], [who(alice)], [who(bob), who(c3)], [who(alice), who(alice)]]) {
              await all(
                `count ${client} ${i} ${rs.length}`,
                read("getResponseCount", [0n, client, i, rs]),
              );
            }
          }
        }
        const n = await all("c1#1 all", read("getResponseCount", [0n, who(c1), 1n, []]));
        assert.deepEqual(n, { ok: true, value: "3n" });
      },
    );

    await t.step("the identity registry each is bound to; the version", async () => {
      for (const p of pairs) {
        const bound = await pub.readContract({
          address: p.reputation,
          abi,
          functionName: "getIdentityRegistry",
        });
        assert.equal(bound, p.identity, p.name);
      }
      await all("version", read("getVersion", []));
    });

    for (const [fn, used] of Object.entries(d.gas)) {
      const [name, at] = fn.split("@");
      const pair = pairs.find((p) => p.reputation.toLowerCase() === at);
      if (pair && name === "giveFeedback") {
        console.log(`gas ${name} (${pair.name}): ${used.slice(0, 4).join(", ")}`);
      }
    }
  } finally {
    await anvil.stop();
  }
});

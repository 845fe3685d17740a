/**
 * Our AgentIdentityRegistry against the official ERC-8004 IdentityRegistryUpgradeable (2.0.0, the
 * test fixture, deployed behind its proxy as its repository does) on one anvil: every call goes
 * to both through the official ABI, and each answer (value, or revert data) and each transaction's
 * logs (topics and data, in order) must be the same. Covers ids from 0, empty reads for unknown
 * ids, the 5-minute deadline window, ECDSA then ERC-1271 wallet proofs, isAuthorizedOrOwner,
 * approvals, unsetAgentWallet and transfers clearing the wallet.
 */
import assert from "node:assert/strict";
import {
  type Address,
  getAddress,
  type Hex,
  stringToHex,
  type WalletClient,
  zeroAddress,
} from "viem";
import { generatePrivateKey } from "viem/accounts";
import { AgentIdentityRegistry } from "../../src/chain/contracts/artifacts/index.ts";
import { AGENT_WALLET_TYPES } from "../../src/chain/agents.ts";
import { ANVIL_KEYS, startAnvil } from "../helpers/anvil.ts";
import { anvilClients } from "../helpers/contract-kit.ts";
import { compile1271 } from "../helpers/erc1271.ts";
import {
  deployOfficialIdentity,
  differ,
  mined,
  OFFICIAL,
  type Outcome,
  reason,
} from "../helpers/erc8004.ts";

const abi = OFFICIAL.IdentityRegistry.abi;

Deno.test("ERC-8004 identity: ours answers as the official registry, call for call", async (t) => {
  const anvil = await startAnvil();
  try {
    const { pub, wallet, chain } = anvilClients(anvil);
    const [deployer, alice, bob, carol] = ANVIL_KEYS.map((k) => wallet(k));
    const official = await deployOfficialIdentity(pub, deployer);
    const ours = getAddress(
      (await mined(
        pub,
        deployer.deployContract({
          abi: AgentIdentityRegistry.abi,
          bytecode: AgentIdentityRegistry.bytecode,
        }),
      )).contractAddress!,
    );
    const d = differ(pub, {
      [official.toLowerCase()]: "identity",
      [ours.toLowerCase()]: "identity",
    });
    const both = async (label: string, f: (reg: Address) => Promise<Outcome>) => {
      const expected = await f(official);
      assert.deepEqual(await f(ours), expected, label);
      return expected;
    };
    const write = (who: WalletClient, fn: string, args: unknown[] = []) => (reg: Address) =>
      d.write(who, reg, abi, fn, args);
    const read = (fn: string, args: unknown[] = []) => (reg: Address) => d.read(reg, abi, fn, args);
    const who = (w: WalletClient) => w.account!.address;
    const failed = (o: Outcome, text: string) =>
      assert.deepEqual(o, { ok: false, revert: reason(text) });

    await t.step("registration: ids from 0, the same events in the same order", async () => {
      const meta = [
        { metadataKey: "name", metadataValue: stringToHex("Scout") },
        { metadataKey: "role", metadataValue: "0x01" },
      ];
      await both("register(uri, metadata)", write(alice, "register", ["ipfs://a", meta]));
      await both("register()", write(bob, "register"));
      await both("register('')", write(carol, "register", [""]));
      await both("register(uri)", write(alice, "register", ["https://a.example/agent.json"]));
      failed(
        await both(
          "reserved key",
          write(bob, "register", ["x", [{ metadataKey: "agentWallet", metadataValue: "0x01" }]]),
        ),
        "reserved key",
      );
      const owner0 = await both("ownerOf(0)", read("ownerOf", [0n]));
      assert.deepEqual(owner0, { ok: true, value: getAddress(who(alice)) });
      assert.deepEqual(await both("ownerOf(4)", read("ownerOf", [4n])), {
        ok: false,
        revert: `0x7e273289${"0".repeat(63)}4`,
      });
    });

    await t.step("reads: known and unknown ids, interfaces, the EIP-712 domain", async () => {
      for (const id of [0n, 1n, 2n, 3n, 99n]) {
        await both(`getAgentWallet(${id})`, read("getAgentWallet", [id]));
        await both(`tokenURI(${id})`, read("tokenURI", [id]));
        for (const key of ["agentWallet", "name", "role", "missing"]) {
          await both(`getMetadata(${id}, ${key})`, read("getMetadata", [id, key]));
        }
        for (const w of [alice, bob]) {
          await both(`isAuthorizedOrOwner(${id})`, read("isAuthorizedOrOwner", [who(w), id]));
        }
        await both(
          `isAuthorizedOrOwner(0x0, ${id})`,
          read("isAuthorizedOrOwner", [zeroAddress, id]),
        );
      }
      assert.deepEqual(await both("unknown wallet", read("getAgentWallet", [99n])), {
        ok: true,
        value: zeroAddress,
      });
      assert.deepEqual(await both("unknown metadata", read("getMetadata", [99n, "name"])), {
        ok: true,
        value: "0x",
      });
      for (const fn of ["name", "symbol", "getVersion", "eip712Domain"]) await both(fn, read(fn));
      await both("balanceOf", read("balanceOf", [who(alice)]));
      for (const id of ["0x01ffc9a7", "0x80ac58cd", "0x5b5e139f", "0x49064906", "0x84b0196e"]) {
        await both(`supportsInterface(${id})`, read("supportsInterface", [id]));
      }
    });

    await t.step("metadata and URI: only the owner or an approved account", async () => {
      failed(
        await both("not owner", write(bob, "setMetadata", [0n, "k", "0x02"])),
        "Not authorized",
      );
      await both("unknown id", write(bob, "setMetadata", [99n, "k", "0x02"]));
      failed(
        await both("reserved", write(alice, "setMetadata", [0n, "agentWallet", "0x02"])),
        "reserved key",
      );
      await both("setMetadata", write(alice, "setMetadata", [0n, "role", "0x02"]));
      failed(await both("uri not owner", write(bob, "setAgentURI", [0n, "x"])), "Not authorized");
      await both("uri unknown", write(bob, "setAgentURI", [99n, "x"]));
      await both("setAgentURI", write(alice, "setAgentURI", [0n, "ipfs://a2"]));
      await both("tokenURI after", read("tokenURI", [0n]));
    });

    const signWallet = (
      signer: WalletClient,
      reg: Address,
      m: { agentId: bigint; newWallet: Address; owner: Address; deadline: bigint },
    ) =>
      signer.account!.signTypedData!({
        domain: {
          name: "ERC8004IdentityRegistry",
          version: "1",
          chainId: chain.id,
          verifyingContract: reg,
        },
        types: AGENT_WALLET_TYPES,
        primaryType: "AgentWalletSet",
        message: m,
      });
    /** setAgentWallet sent by `from`, the new wallet's proof signed by `signer`. */
    const setWallet = (
      from: WalletClient,
      signer: WalletClient,
      o: { agentId: bigint; newWallet: Address; owner: Address; deadline: bigint; sig?: Hex },
    ) =>
    async (reg: Address) =>
      await d.write(from, reg, abi, "setAgentWallet", [
        o.agentId,
        o.newWallet,
        o.deadline,
        o.sig ?? await signWallet(signer, reg, o),
      ]);

    await t.step("agent wallet: the 5-minute window, ECDSA then ERC-1271", async () => {
      const now = (await pub.getBlock()).timestamp;
      const base = { agentId: 0n, newWallet: who(bob), owner: who(alice), deadline: now + 200n };
      failed(await both("not owner", setWallet(carol, bob, base)), "Not authorized");
      await both("unknown id", setWallet(alice, bob, { ...base, agentId: 99n }));
      failed(
        await both("zero", setWallet(alice, bob, { ...base, newWallet: zeroAddress })),
        "bad wallet",
      );
      failed(
        await both("expired", setWallet(alice, bob, { ...base, deadline: now - 60n })),
        "expired",
      );
      failed(
        await both("too far", setWallet(alice, bob, { ...base, deadline: now + 400n })),
        "deadline too far",
      );
      failed(await both("wrong signer", setWallet(alice, carol, base)), "invalid wallet sig");
      failed(
        await both("garbage", setWallet(alice, bob, { ...base, sig: "0x1234" })),
        "invalid wallet sig",
      );
      await both("EOA proof", setWallet(alice, bob, base));
      assert.deepEqual(await both("wallet", read("getAgentWallet", [0n])), {
        ok: true,
        value: getAddress(who(bob)),
      });
      await both("wallet metadata", read("getMetadata", [0n, "agentWallet"]));

      // A smart account (ERC-1271, owned by alice) as agent 3's wallet.
      const w1271 = compile1271();
      const account = getAddress(
        (await mined(
          pub,
          deployer.deployContract({ abi: w1271.abi, bytecode: w1271.bytecode, args: [who(alice)] }),
        )).contractAddress!,
      );
      const sca = { agentId: 3n, newWallet: account, owner: who(alice), deadline: now + 200n };
      failed(await both("1271 wrong owner", setWallet(alice, carol, sca)), "invalid wallet sig");
      await both("1271 proof", setWallet(alice, alice, sca));
      await both("1271 wallet", read("getAgentWallet", [3n]));
    });

    await t.step("approvals: an approved account acts for the owner", async () => {
      await both("approve", write(alice, "approve", [who(carol), 0n]));
      await both("approved is authorized", read("isAuthorizedOrOwner", [who(carol), 0n]));
      await both("approved sets metadata", write(carol, "setMetadata", [0n, "k", "0x03"]));
      const now = (await pub.getBlock()).timestamp;
      await both(
        "approved sets the wallet (owner signs as owner)",
        setWallet(carol, carol, {
          agentId: 0n,
          newWallet: who(carol),
          owner: who(alice),
          deadline: now + 100n,
        }),
      );
      await both("operator", write(alice, "setApprovalForAll", [who(bob), true]));
      await both("operator is authorized", read("isAuthorizedOrOwner", [who(bob), 3n]));
      await both("operator sets the URI", write(bob, "setAgentURI", [3n, "ipfs://by-operator"]));
      failed(
        await both("unset, not owner", write(carol, "unsetAgentWallet", [1n])),
        "Not authorized",
      );
      await both("unset", write(alice, "unsetAgentWallet", [3n]));
      await both("unset wallet", read("getAgentWallet", [3n]));
    });

    await t.step("transfers clear the wallet (to oneself too); ids go on", async () => {
      await both("transfer", write(alice, "transferFrom", [who(alice), who(carol), 0n]));
      assert.deepEqual(await both("cleared", read("getAgentWallet", [0n])), {
        ok: true,
        value: zeroAddress,
      });
      await both("approval gone", read("isAuthorizedOrOwner", [who(alice), 0n]));
      await both("register for the wallet", write(carol, "register"));
      await both("self transfer", write(carol, "transferFrom", [who(carol), who(carol), 4n]));
      await both("self cleared", read("getAgentWallet", [4n]));
      const stranger = wallet(generatePrivateKey());
      await both(
        "safe transfer",
        write(carol, "safeTransferFrom", [who(carol), who(stranger), 0n]),
      );
      await both("new owner", read("ownerOf", [0n]));
      await both("balance", read("balanceOf", [who(carol)]));
      await both("ids go on", write(bob, "register", ["ipfs://five"]));
      assert.deepEqual(await both("id 5", read("tokenURI", [5n])), {
        ok: true,
        value: "ipfs://five",
      });
    });

    for (const [fn, used] of Object.entries(d.gas)) {
      const [name, at] = fn.split("@");
      console.log(
        `gas ${name} (${at === official.toLowerCase() ? "official" : "ours"}): ${used.join(", ")}`,
      );
    }
  } finally {
    await anvil.stop();
  }
});

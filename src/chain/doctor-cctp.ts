/**
 * The CCTP half of `deno task doctor`: for each chain with a CCTP domain, whether the configured
 * (Circle's) or recorded (ours) MessageTransmitterV2 has the profile's domain, whether its
 * TokenMessengerV2 sends through it, trusts the messenger on each remote chain it bridges with
 * (testnet ↔ every configured source chain) and mints local USDC for the remote USDC, and
 * whether attestations can be had: the attestation API answers, or the local attester holds as
 * many of the destination's enabled attesters as its signature threshold. Read-only.
 */
import { type Hex, pad, type PublicClient } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { CIRCLE_MESSENGER_ABI, CIRCLE_MINTER_ABI, TRANSMITTER_VIEW_ABI } from "./cctp-message.ts";
import type { DoctorCheck } from "./doctor.ts";
import {
  type CctpConfig,
  CONTRACT_ENV,
  type ContractName,
  type ProfileConfig,
} from "./profiles.ts";

/** A chain the doctor reached: its client and the CCTP addresses it found. */
export interface CctpSite {
  profile: ProfileConfig;
  client: PublicClient;
  address(name: ContractName): `0x${string}` | undefined;
}

const read = <T>(
  client: PublicClient,
  address: `0x${string}`,
  abi: readonly unknown[],
  functionName: string,
  args: unknown[] = [],
) => client.readContract({ address, abi, functionName, args } as never) as Promise<T>;

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();
const b32 = (a: `0x${string}`): Hex => pad(a.toLowerCase() as `0x${string}`, { size: 32 });

export async function inspectCctp(
  site: CctpSite,
  peers: CctpSite[],
  cctp: CctpConfig,
): Promise<DoctorCheck[]> {
  const { profile, client } = site;
  const p = profile.envPrefix;
  const domain = profile.cctpDomain!;
  const transmitter = site.address("MessageTransmitterV2");
  const messenger = site.address("TokenMessengerV2");
  const usdc = site.address("TestUSDC");
  if (!transmitter || !messenger || !usdc) return [];
  const varOf = (name: ContractName) => `${p}_${CONTRACT_ENV[name]}`;
  const out: DoctorCheck[] = [];
  const check = (name: string, ok: boolean, detail: string, fix: string) =>
    out.push({ name: `${profile.name}: CCTP ${name}`, ok, detail, fix: ok ? undefined : fix });

  const local = await read<number>(client, transmitter, TRANSMITTER_VIEW_ABI, "localDomain")
    .catch(() => null);
  check(
    "transmitter domain",
    local === domain,
    local === null
      ? `${transmitter} has no localDomain(): not a MessageTransmitterV2`
      : `${transmitter} is domain ${local}, ${profile.name} is domain ${domain}`,
    `set ${
      varOf("MessageTransmitterV2")
    } to the MessageTransmitterV2 of chain ${profile.chainId} (domain ${domain}), from Circle's list of CCTP v2 contracts`,
  );
  const via = await read<`0x${string}`>(
    client,
    messenger,
    CIRCLE_MESSENGER_ABI,
    "localMessageTransmitter",
  ).catch(() => null);
  check(
    "messenger's transmitter",
    !!via && same(via, transmitter),
    via ? `${messenger} sends through ${via}` : `${messenger} is not a TokenMessengerV2`,
    `set ${varOf("TokenMessengerV2")} and ${
      varOf("MessageTransmitterV2")
    } to one deployment's pair`,
  );
  // Circle splits the minter out (localMinter → TokenMinterV2); ours maps tokens itself.
  const minter = await read<`0x${string}`>(client, messenger, CIRCLE_MESSENGER_ABI, "localMinter")
    .catch(() => null);
  for (const peer of peers) {
    const remoteMessenger = peer.address("TokenMessengerV2");
    const remoteUsdc = peer.address("TestUSDC");
    const rd = peer.profile.cctpDomain!;
    if (!remoteMessenger || !remoteUsdc) continue;
    const linked = await read<Hex>(
      client,
      messenger,
      CIRCLE_MESSENGER_ABI,
      "remoteTokenMessengers",
      [
        rd,
      ],
    ).catch(() => null);
    check(
      `link to ${peer.profile.name}`,
      !!linked && same(linked, b32(remoteMessenger)),
      `the messenger's remote messenger for domain ${rd} is ${
        linked ?? "unreadable"
      }; ${peer.profile.name}'s is ${remoteMessenger}`,
      `${peer.profile.name} (domain ${rd}) is not a remote of this messenger: set ${
        varOf("TokenMessengerV2")
      } and ${peer.profile.envPrefix}_TOKEN_MESSENGER_ADDRESS to Circle's deployments of one environment (testnets with testnets), or, for our own contracts, start the service (it links them)`,
    );
    const mapped = minter
      ? await read<`0x${string}`>(client, minter, CIRCLE_MINTER_ABI, "getLocalToken", [
        rd,
        b32(remoteUsdc),
      ]).catch(() => null)
      : await read<Hex>(client, messenger, CIRCLE_MESSENGER_ABI, "remoteTokens", [rd])
        .then((t) => same(t, b32(remoteUsdc)) ? usdc : null).catch(() => null);
    check(
      `token pair with ${peer.profile.name}`,
      !!mapped && same(mapped, usdc),
      `${peer.profile.name}'s USDC ${remoteUsdc} mints ${
        mapped ?? "nothing"
      } here; local USDC is ${usdc}`,
      `set ${
        varOf("TestUSDC")
      } and ${peer.profile.envPrefix}_USDC_ADDRESS to the USDC Circle's minters link (Circle's list of USDC addresses)`,
    );
  }
  out.push(await attestationCheck(site, cctp));
  return out;
}

/** Whether burns into this chain can be attested: the API answers, or our keys suffice here. */
async function attestationCheck(site: CctpSite, cctp: CctpConfig): Promise<DoctorCheck> {
  const name = `${site.profile.name}: CCTP attestations`;
  if (cctp.attestationApiUrl) {
    const url = `${cctp.attestationApiUrl}/v2/burn/USDC/fees/${site.profile.cctpDomain}/${
      site.profile.cctpDomain === 26 ? 6 : 26
    }`;
    const status = await fetch(url, { signal: AbortSignal.timeout(5000) })
      .then(async (r) => (await r.body?.cancel(), r.status)).catch((e) => String(e).slice(0, 120));
    return {
      name,
      ok: status === 200,
      detail: `${url} answered ${status}`,
      fix:
        "check CCTP_ATTESTATION_API_URL (Circle's: https://iris-api-sandbox.circle.com for testnets, https://iris-api.circle.com for mainnets)",
    };
  }
  if (!cctp.attesterKeys.length) {
    return {
      name,
      ok: true,
      warn: true,
      detail: "no CCTP_ATTESTATION_API_URL and no attester key: burns cannot be attested",
      fix: "set CCTP_ATTESTATION_API_URL (Circle's: https://iris-api-sandbox.circle.com) to bridge",
    };
  }
  const transmitter = site.address("MessageTransmitterV2")!;
  const threshold = await read<bigint>(
    site.client,
    transmitter,
    TRANSMITTER_VIEW_ABI,
    "signatureThreshold",
  ).catch(() => null);
  let held = 0;
  for (const key of cctp.attesterKeys) {
    const a = privateKeyToAccount(key).address;
    if (
      await read<boolean>(site.client, transmitter, TRANSMITTER_VIEW_ABI, "isEnabledAttester", [a])
        .catch(() => false)
    ) held++;
  }
  const ok = threshold !== null && BigInt(held) >= threshold;
  return {
    name,
    ok,
    detail:
      `no CCTP_ATTESTATION_API_URL: the local attester holds ${held} of this transmitter's attesters, it needs ${
        threshold ?? "?"
      } signatures`,
    fix:
      "Circle's transmitters trust Circle's attesters only: set CCTP_ATTESTATION_API_URL to Circle's attestation service (or CCTP_ATTESTER_KEYS to the keys this transmitter trusts)",
  };
}

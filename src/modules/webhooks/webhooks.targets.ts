/**
 * Which webhook targets we connect to. Under the `public` policy (always in production) only
 * https URLs whose every address is public unicast are delivered: loopback, private, link-local
 * (cloud metadata), unique-local, CGNAT, multicast, reserved, and the IPv6 ranges that embed an
 * IPv4 address (mapped, NAT64, 6to4, Teredo) are refused. Numeric host forms (`0x7f000001`,
 * `2130706433`, `127.1`) are normalised by the URL parser before we look at them, and names are
 * checked in the socket's own DNS lookup, so what we check is what we connect to.
 */
import ipaddr from "ipaddr.js";
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from "node:dns";

export type TargetPolicy = "public" | "any";

export class TargetRefused extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = "TargetRefused";
  }
}

/** True for a public unicast address. */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  const parsed = ipaddr.parse(address);
  return parsed.range() === "unicast";
}

/** The literal IP of a URL host (brackets stripped), or null for a name. */
export function literalAddress(url: URL): string | null {
  const host = url.hostname.replace(/^\[|\]$/g, "");
  return ipaddr.isValid(host) ? host : null;
}

export type UrlCheck = { ok: true; url: URL } | { ok: false; reason: string };

/** Static checks at request time: well-formed, right scheme, no credentials, not a bad literal. */
export function checkWebhookUrl(raw: string, policy: TargetPolicy): UrlCheck {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: "not a URL" };
  }
  if (raw.length > 2048) return { ok: false, reason: "longer than 2048 characters" };
  if (url.username || url.password) return { ok: false, reason: "credentials in the URL" };
  if (policy === "public") {
    if (url.protocol !== "https:") return { ok: false, reason: "not https" };
    const literal = literalAddress(url);
    if (literal && !isPublicAddress(literal)) {
      return { ok: false, reason: `non-public address ${literal}` };
    }
    // RFC 6761: `localhost` and every name under it are loopback, whatever a resolver says
    // (accepted here before, then refused at every delivery).
    if (/(^|\.)localhost\.?$/i.test(url.hostname)) {
      return { ok: false, reason: `non-public address ${url.hostname}` };
    }
  } else if (url.protocol !== "https:" && url.protocol !== "http:") {
    return { ok: false, reason: "not http(s)" };
  }
  return { ok: true, url };
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * A `lookup` for node:http(s) that resolves every address of the name and refuses the whole
 * name if any of them is not public.
 */
export function guardedLookup(
  hostname: string,
  options: LookupOptions,
  callback: LookupCallback,
): void {
  dnsLookup(hostname, { all: true, family: 0 }, (err, addresses) => {
    if (err) return callback(err, []);
    const list = addresses as LookupAddress[];
    const bad = list.find((a) => !isPublicAddress(a.address));
    if (bad || list.length === 0) {
      const e = new TargetRefused(
        bad
          ? `${hostname} resolves to non-public address ${bad.address}`
          : `${hostname} has no address`,
      ) as Error & NodeJS.ErrnoException;
      e.code = "ETARGETREFUSED";
      return callback(e, []);
    }
    if (options?.all) return callback(null, list);
    callback(null, list[0].address, list[0].family);
  });
}

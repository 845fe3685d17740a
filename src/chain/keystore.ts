/**
 * Envelope encryption for managed wallet private keys (DESIGN.md §5), on WebCrypto AES-256-GCM.
 *
 * Each wallet gets a fresh random 256-bit data key (DEK) that encrypts its private key; the DEK
 * is stored wrapped by the master key (`WALLET_MASTER_KEY`). Both layers authenticate `aad`
 * (the caller passes the wallet address), so ciphertexts moved onto another wallet row fail to
 * open. The aad is bound with a per-layer label, so the layers cannot be swapped either.
 *
 * The caller must pass byte-identical aad to seal and open (e.g. always the lowercase address).
 * Nothing here logs, and no error message carries key material.
 */

export interface SealedKey {
  version: 1;
  keyCiphertext: Uint8Array;
  keyIv: Uint8Array;
  dekCiphertext: Uint8Array;
  dekIv: Uint8Array;
}

export class KeystoreError extends Error {
  override name = "KeystoreError";
}

const DECRYPT_FAILED = "cannot decrypt wallet key: wrong master key or tampered data";
const IV_BYTES = 12;
const MASTER_KEY_HEX = /^(?:0x)?([0-9a-fA-F]{64})$/;
const PRIVATE_KEY_HEX = /^0x[0-9a-fA-F]{64}$/;
const AES: AesKeyGenParams = { name: "AES-GCM", length: 256 };

/**
 * Encrypts a private key under a new data key, itself wrapped by the master key. The result
 * opens to the lowercase hex form of the key.
 */
export async function sealPrivateKey(
  masterKeyHex: string,
  privateKey: `0x${string}`,
  aad: string,
): Promise<SealedKey> {
  const master = await importMasterKey(masterKeyHex);
  checkAad(aad);
  if (typeof privateKey !== "string" || !PRIVATE_KEY_HEX.test(privateKey)) {
    throw new KeystoreError("private key must be 0x followed by 64 hex characters");
  }
  const dek = await crypto.subtle.generateKey(AES, true, ["encrypt"]);
  const keyIv = randomIv();
  const plain = hexToBytes(privateKey.slice(2));
  let keyCiphertext: ArrayBuffer;
  try {
    keyCiphertext = await crypto.subtle.encrypt(gcm(keyIv, "key", aad), dek, plain);
  } finally {
    plain.fill(0);
  }
  const dekIv = randomIv();
  const dekCiphertext = await crypto.subtle.wrapKey("raw", dek, master, gcm(dekIv, "dek", aad));
  return {
    version: 1,
    keyCiphertext: new Uint8Array(keyCiphertext),
    keyIv,
    dekCiphertext: new Uint8Array(dekCiphertext),
    dekIv,
  };
}

/**
 * Opens a sealed key. Any failure — wrong master key, wrong aad, altered bytes, a malformed
 * record — is one `KeystoreError` with no detail. A malformed master key is reported as such.
 */
export async function openPrivateKey(
  masterKeyHex: string,
  sealed: SealedKey,
  aad: string,
): Promise<`0x${string}`> {
  const master = await importMasterKey(masterKeyHex);
  checkAad(aad);
  let plain: Uint8Array | undefined;
  try {
    if (sealed?.version !== 1) throw new Error();
    const keyIv = copyIv(sealed.keyIv);
    const dekIv = copyIv(sealed.dekIv);
    const dek = await crypto.subtle.unwrapKey(
      "raw",
      copy(sealed.dekCiphertext),
      master,
      gcm(dekIv, "dek", aad),
      AES,
      false,
      ["decrypt"],
    );
    plain = new Uint8Array(
      await crypto.subtle.decrypt(gcm(keyIv, "key", aad), dek, copy(sealed.keyCiphertext)),
    );
    if (plain.length !== 32) throw new Error();
    return `0x${bytesToHex(plain)}`;
  } catch {
    throw new KeystoreError(DECRYPT_FAILED);
  } finally {
    plain?.fill(0);
  }
}

async function importMasterKey(masterKeyHex: string): Promise<CryptoKey> {
  const m = typeof masterKeyHex === "string" ? MASTER_KEY_HEX.exec(masterKeyHex) : null;
  if (!m) {
    throw new KeystoreError(
      "wallet master key must be 32 bytes as 64 hex characters (optionally 0x-prefixed)",
    );
  }
  const raw = hexToBytes(m[1]);
  try {
    return await crypto.subtle.importKey("raw", raw, AES, false, ["wrapKey", "unwrapKey"]);
  } finally {
    raw.fill(0);
  }
}

function checkAad(aad: string): void {
  if (typeof aad !== "string" || aad === "") {
    throw new KeystoreError("aad must be a non-empty string (the wallet address)");
  }
}

function gcm(iv: Uint8Array<ArrayBuffer>, layer: "key" | "dek", aad: string): AesGcmParams {
  return {
    name: "AES-GCM",
    iv,
    additionalData: new TextEncoder().encode(`settlement/keystore/v1/${layer}\n${aad}`),
  };
}

function randomIv(): Uint8Array<ArrayBuffer> {
  return crypto.getRandomValues(new Uint8Array(IV_BYTES));
}

/** Copies into a fresh ArrayBuffer-backed array (stored rows may arrive as Node Buffers). */
function copy(bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  if (!(bytes instanceof Uint8Array)) throw new Error();
  return new Uint8Array(bytes);
}

function copyIv(bytes: Uint8Array): Uint8Array<ArrayBuffer> {
  const iv = copy(bytes);
  if (iv.length !== IV_BYTES) throw new Error();
  return iv;
}

function hexToBytes(hex: string): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

function bytesToHex(bytes: Uint8Array): string {
  let hex = "";
  for (const b of bytes) hex += b.toString(16).padStart(2, "0");
  return hex;
}

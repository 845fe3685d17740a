/**
 * What text the service accepts, decided once for every input (body fields and keys, path
 * segments, query parameters, form fields): well-formed Unicode (no lone surrogates, which
 * PostgreSQL refuses in json) without NUL (which PostgreSQL refuses in text), and JSON nested at
 * most MAX_JSON_DEPTH levels. Pure functions; the edge middleware (limits.ts) applies them.
 */

export const MAX_JSON_DEPTH = 32;

/** Longest field path named in an error text; longer or odd keys are not echoed. */
const MAX_NAMED = 120;

export function acceptableText(s: string): boolean {
  return !s.includes("\u0000") && s.isWellFormed();
}

export type FieldPath = (string | number)[];

/** Where a parsed JSON value breaks the text rule: the path of the bad string or key. */
export interface TextFault {
  path: FieldPath;
  /** The bad text is a key of the object at `path`. */
  inKey: boolean;
}

/** Walks a parsed JSON value without recursion; the first bad string or key, or null. */
export function findTextFault(value: unknown): TextFault | null {
  // Each entry links to its parent, so a path is built only for the fault.
  type Node = { v: unknown; key?: string | number; parent?: Node };
  const pathOf = (n: Node) => {
    const path: FieldPath = [];
    for (let at: Node | undefined = n; at?.parent; at = at.parent) path.push(at.key!);
    return path.reverse();
  };
  const stack: Node[] = [{ v: value }];
  while (stack.length) {
    const node = stack.pop()!;
    const v = node.v;
    if (typeof v === "string") {
      if (!acceptableText(v)) return { path: pathOf(node), inKey: false };
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ v: v[i], key: i, parent: node });
    } else if (v !== null && typeof v === "object") {
      const entries = Object.entries(v);
      for (const [k] of entries) if (!acceptableText(k)) return { path: pathOf(node), inKey: true };
      for (let i = entries.length - 1; i >= 0; i--) {
        stack.push({ v: entries[i][1], key: entries[i][0], parent: node });
      }
    }
  }
  return null;
}

/**
 * A field path as error texts name it (`metadata.note`, `scopes.1`, like zod's paths), cut at
 * the first segment that is too long or not plain to echo; `fallback` when nothing is left.
 */
export function nameField(path: FieldPath, fallback: string): string {
  const parts: string[] = [];
  for (const seg of path) {
    const s = String(seg);
    // deno-lint-ignore no-control-regex
    if (s === "" || /[\u0000-\u001f\u007f"\\]/.test(s) || !s.isWellFormed()) break;
    if ([...parts, s].join(".").length > MAX_NAMED) break;
    parts.push(s);
  }
  return parts.length ? parts.join(".") : fallback;
}

export type DepthScan = { ok: true } | { ok: false; field?: string };

/** Longest top-level key kept while scanning, to name it; longer keys are not echoed anyway. */
const MAX_KEY_BYTES = 256;

/**
 * Measures the nesting of raw JSON before JSON.parse sees it (deep input can overflow the stack
 * of anything recursive that handles the parsed value). Fed the UTF-8 bytes as they arrive, so a
 * too-deep body is refused before it is all read, and never decoded (multi-byte sequences hold
 * no ASCII bytes). Strings are skipped, so brackets inside them do not count; malformed JSON is
 * left to JSON.parse. On failure, names the top-level key under which the limit was passed,
 * when the body is an object.
 */
export class JsonDepthScanner {
  private depth = 0;
  private inString = false;
  private escaped = false;
  private topIsObject = false;
  /** The bytes of the depth-1 string being read (a candidate key), or null past the cap. */
  private current: number[] | null = null;
  private lastString: number[] | null = null;
  private key: number[] | null = null;
  result: DepthScan = { ok: true };

  constructor(private readonly max = MAX_JSON_DEPTH) {}

  /** Scans the next bytes; false once the limit is passed. */
  push(bytes: Uint8Array): boolean {
    if (!this.result.ok) return false;
    for (let i = 0; i < bytes.length; i++) {
      const ch = bytes[i];
      if (this.inString) {
        if (this.current && this.current.push(ch) > MAX_KEY_BYTES) this.current = null;
        if (this.escaped) this.escaped = false;
        else if (ch === 0x5c /* \ */) this.escaped = true;
        else if (ch === 0x22 /* " */) {
          this.inString = false;
          if (this.depth === 1) this.lastString = this.current;
        }
      } else if (ch === 0x22) {
        this.inString = true;
        this.current = this.depth === 1 ? [ch] : null;
      } else if (ch === 0x3a /* : */) {
        if (this.depth === 1) this.key = this.lastString;
      } else if (ch === 0x7b /* { */ || ch === 0x5b /* [ */) {
        if (this.depth === 0) this.topIsObject = ch === 0x7b;
        if (++this.depth > this.max) {
          const key = this.topIsObject && this.key ? keyName(new Uint8Array(this.key)) : undefined;
          this.result = { ok: false, field: key };
          return false;
        }
      } else if (ch === 0x7d /* } */ || ch === 0x5d /* ] */) {
        this.depth--;
      }
    }
    return true;
  }
}

export function scanJsonDepth(json: string | Uint8Array, max = MAX_JSON_DEPTH): DepthScan {
  const scanner = new JsonDepthScanner(max);
  scanner.push(typeof json === "string" ? new TextEncoder().encode(json) : json);
  return scanner.result;
}

function keyName(literal: Uint8Array): string | undefined {
  try {
    const k = JSON.parse(new TextDecoder().decode(literal));
    return typeof k === "string" && acceptableText(k) ? nameField([k], "") || undefined : undefined;
  } catch {
    return undefined;
  }
}

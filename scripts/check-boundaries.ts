/**
 * The module-boundary check run by `deno task check` (docs/decisions.md, "Module boundaries").
 * It reads the source text of every .ts/.tsx file under src/ and fails on:
 *
 * 1. a repo imported from outside its module: `X.repo.ts` may be imported (type imports and
 *    side-effect imports `import "./x.repo.ts"` included) only by files of its own module, and
 *    never by a handler file (`*.api.ts`, `*.pages.tsx`, `*.section.tsx`, `*.routes.tsx`), which
 *    go through the service. A module is a folder `src/modules/<name>/`, or a top-level folder
 *    of src/ (`src/chain/`, `src/http/`, ...); files directly in src/ are the root, which has no
 *    repos.
 * 2. `src/chain/` importing `src/http/`.
 * 3. SQL outside a repo file. SQL is a postgres.js tagged template on a connection named like
 *    one (`sql`, `tx`, `db`, ending in `sql` or `tx`, optionally with a `<Row[]>` type argument:
 *    `` sql`…` ``, `` tx<Row[]>`…` ``, `` this.opts.sql`…` ``) or a call to `.unsafe(`. Exempt:
 *    `*.repo.ts`; `src/db/` (client, migration runner, embedded PostgreSQL) and `src/queue/`
 *    (the pg-boss adapter), whose SQL is infrastructure, not a module's data.
 * 4. another domain module reaching a module's repo through one of its files: a file of
 *    `src/modules/<b>/` that imports b's repo may be imported from another module only when it
 *    is b's service (`*.service.ts`) or a known entry point listed in ENTRY_POINTS with its
 *    reason (a dashboard helper of b that reads b's repo for another module's section is not).
 *
 * Usage: `deno run --allow-read scripts/check-boundaries.ts [root]` (root defaults to the
 * current directory); prints each violation and exits 1 when there is any.
 */
export interface Violation {
  file: string;
  line: number;
  rule: "repo-import" | "chain-imports-http" | "sql-outside-repo" | "repo-via-module";
  message: string;
}

/** Known violations, each with the change that removes it (none today). */
const KNOWN: Record<string, Violation["rule"]> = {};

/**
 * Files besides `*.service.ts` that other modules may import although they read their module's
 * repo (rule 4), each with its reason.
 */
export const ENTRY_POINTS: Record<string, string> = {
  // The webhook secret is a column of merchants: webhooks read and roll it through this file,
  // apart from merchants.service.ts, which reaches payments, which reach webhooks.
  "src/modules/merchants/merchants.secrets.ts": "the merchants side of the webhook secret",
  // Checkout's half of the payments service: the bridge's cross-chain checkout loads the payment
  // it pays through it, as the checkout page does.
  "src/modules/payments/payments.checkout.ts": "the payments service's checkout half",
};

const HANDLER_FILE = /\.(api\.ts|pages\.tsx|section\.tsx|routes\.tsx)$/;
const SQL_EXEMPT_DIRS = ["src/db/", "src/queue/"];
const IMPORT = /(?:^|\n)\s*(?:import|export)\b[^;]*?\bfrom\s*["']([^"']+)["']/g;
const DYNAMIC_IMPORT = /\bimport\(\s*["']([^"']+)["']\s*\)/g;
const SIDE_EFFECT_IMPORT = /(?:^|\n)\s*import\s*["']([^"']+)["']/g;
const SQL_TEMPLATE =
  /\b(?:[A-Za-z_$][\w$]*\.)*(?:sql|tx|db|[A-Za-z_$][\w$]*(?:Sql|Tx))(?:<[^`=]*?>)?`/g;
const UNSAFE = /\.unsafe\(/g;

/** The module a src/ file belongs to: "modules/<name>", "<top-level folder>", or "" (root). */
export function moduleOf(file: string): string {
  const parts = file.replace(/^src\//, "").split("/");
  if (parts[0] === "modules" && parts.length > 2) return `modules/${parts[1]}`;
  return parts.length > 1 ? parts[0] : "";
}

/** Checks one file's text; `file` is its path relative to the repository root (src/...). */
export function checkFile(file: string, text: string): Violation[] {
  const out: Violation[] = [];
  const lineAt = (index: number) => text.slice(0, index).split("\n").length;
  const code = stripComments(text);

  for (const { target, at } of importsOf(file, code)) {
    if (target.endsWith(".repo.ts")) {
      if (moduleOf(target) !== moduleOf(file)) {
        out.push({
          file,
          line: at,
          rule: "repo-import",
          message: `imports ${target}, another module's repo: call its service instead`,
        });
      } else if (HANDLER_FILE.test(file)) {
        out.push({
          file,
          line: at,
          rule: "repo-import",
          message: `handler file imports ${target}: handlers call the service`,
        });
      }
    }
    if (file.startsWith("src/chain/") && target.startsWith("src/http/")) {
      out.push({
        file,
        line: at,
        rule: "chain-imports-http",
        message: `imports ${target}: src/chain/ never imports src/http/`,
      });
    }
  }

  const sqlExempt = file.endsWith(".repo.ts") || SQL_EXEMPT_DIRS.some((d) => file.startsWith(d));
  if (!sqlExempt) {
    for (const re of [SQL_TEMPLATE, UNSAFE]) {
      for (const m of code.matchAll(re)) {
        out.push({
          file,
          line: lineAt(m.index!),
          rule: "sql-outside-repo",
          message: `SQL (${m[0].trim()}) outside a repo file: move it into a *.repo.ts function`,
        });
      }
    }
  }
  return out.filter((v) => KNOWN[v.file] !== v.rule).sort((a, b) => a.line - b.line);
}

/** The relative imports of a file's code (comments stripped): resolved target and line. */
function importsOf(file: string, code: string): { target: string; at: number }[] {
  const out: { target: string; at: number }[] = [];
  for (const re of [IMPORT, DYNAMIC_IMPORT, SIDE_EFFECT_IMPORT]) {
    for (const m of code.matchAll(re)) {
      const spec = m[1];
      if (!spec.startsWith(".")) continue;
      const at = code.slice(0, m.index! + m[0].indexOf(spec)).split("\n").length;
      out.push({ target: resolve(file, spec), at });
    }
  }
  return out;
}

/**
 * Rule 4 over a set of files (path relative to the repository root → text): imports from another
 * domain module of a file that reads its own module's repo, unless it is the service or a known
 * entry point.
 */
export function checkImports(files: Map<string, string>): Violation[] {
  const imports = new Map(
    [...files].map(([file, text]) => [file, importsOf(file, stripComments(text))]),
  );
  const readsRepo = (file: string) =>
    (imports.get(file) ?? []).some(({ target }) =>
      target.endsWith(".repo.ts") && moduleOf(target) === moduleOf(file)
    );
  const out: Violation[] = [];
  for (const [file, list] of imports) {
    for (const { target, at } of list) {
      const owner = moduleOf(target);
      if (!owner.startsWith("modules/") || owner === moduleOf(file)) continue;
      if (target.endsWith(".service.ts") || target.endsWith(".repo.ts")) continue;
      if (ENTRY_POINTS[target] || !readsRepo(target)) continue;
      out.push({
        file,
        line: at,
        rule: "repo-via-module",
        message: `imports ${target}, which reads its module's repo: call its service instead`,
      });
    }
  }
  return out.filter((v) => KNOWN[v.file] !== v.rule);
}

/** Every violation under `root`/src. */
export async function checkTree(root: string): Promise<Violation[]> {
  const out: Violation[] = [];
  const files = new Map<string, string>();
  for await (const file of walk(`${root}/src`, /\.tsx?$/)) {
    const rel = file.slice(root.length + 1);
    const text = await Deno.readTextFile(file);
    files.set(rel, text);
    out.push(...checkFile(rel, text));
  }
  out.push(...checkImports(files));
  return out.sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line);
}

/** Comments blanked out (same length, newlines kept) so text in them is neither code nor SQL. */
function stripComments(text: string): string {
  return text.replace(
    /\/\*[\s\S]*?\*\/|(^|[^:"'`\\])\/\/[^\n]*/g,
    (m, pre: string | undefined) =>
      (pre ?? "") + m.slice((pre ?? "").length).replace(/[^\n]/g, " "),
  );
}

async function* walk(dir: string, pattern: RegExp): AsyncGenerator<string> {
  const entries: Deno.DirEntry[] = [];
  for await (const e of Deno.readDir(dir)) entries.push(e);
  entries.sort((a, b) => a.name.localeCompare(b.name));
  for (const e of entries) {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory) yield* walk(path, pattern);
    else if (e.isFile && pattern.test(e.name)) yield path;
  }
}

function resolve(from: string, spec: string): string {
  const parts = from.split("/").slice(0, -1);
  for (const seg of spec.split("/")) {
    if (seg === "..") parts.pop();
    else if (seg !== ".") parts.push(seg);
  }
  return parts.join("/");
}

if (import.meta.main) {
  const root = (Deno.args[0] ?? Deno.cwd()).replace(/\/$/, "");
  const violations = await checkTree(root);
  for (const v of violations) console.error(`${v.file}:${v.line}: [${v.rule}] ${v.message}`);
  if (violations.length) {
    console.error(`${violations.length} module-boundary violation(s); see docs/decisions.md`);
    Deno.exit(1);
  }
  console.log("module boundaries: ok");
}

import assert from "node:assert/strict";
import { join } from "node:path";
import {
  checkFile,
  checkImports,
  checkTree,
  ENTRY_POINTS,
  moduleOf,
} from "../../scripts/check-boundaries.ts";

const rules = (file: string, text: string) => checkFile(file, text).map((v) => v.rule);

Deno.test("boundaries: a module's repo is imported only by its own non-handler files", () => {
  const other = `import * as repo from "../merchants/merchants.repo.ts";\n`;
  assert.deepEqual(rules("src/modules/keys/keys.service.ts", other), ["repo-import"]);
  const typeOnly = `import type { MerchantRow } from "../merchants/merchants.repo.ts";\n`;
  assert.deepEqual(rules("src/modules/keys/keys.service.ts", typeOnly), ["repo-import"]);
  const fromHttp = `import * as m from "../modules/merchants/merchants.repo.ts";\n`;
  assert.deepEqual(rules("src/http/auth.ts", fromHttp), ["repo-import"]);
  const own = `import * as repo from "./mail.repo.ts";\n`;
  assert.deepEqual(rules("src/modules/mail/mail.service.ts", own), []);
  assert.deepEqual(rules("src/modules/mail/mail.pages.tsx", own), ["repo-import"]);
  const service = `import { x } from "../merchants/merchants.service.ts";\n`;
  assert.deepEqual(rules("src/modules/keys/keys.service.ts", service), []);
  // A side-effect import crosses the boundary too.
  const bare = `import "../merchants/merchants.repo.ts";\n`;
  assert.deepEqual(rules("src/modules/keys/keys.service.ts", bare), ["repo-import"]);
  assert.deepEqual(rules("src/modules/mail/mail.api.ts", `import "./mail.repo.ts";\n`), [
    "repo-import",
  ]);
});

Deno.test("boundaries: another module reads a module's repo only through its service", () => {
  const files = new Map([
    ["src/modules/jobs/jobs.repo.ts", "export const q = 1;\n"],
    ["src/modules/jobs/jobs.service.ts", `import * as repo from "./jobs.repo.ts";\n`],
    ["src/modules/jobs/jobs.dashboard.ts", `import * as repo from "./jobs.repo.ts";\n`],
    ["src/modules/jobs/jobs.rules.ts", "export const r = 1;\n"],
    [
      "src/modules/agents/agents.section.tsx",
      [
        `import { a } from "../jobs/jobs.service.ts";`,
        `import { b } from "../jobs/jobs.rules.ts";`,
        `import { c } from "../jobs/jobs.dashboard.ts";`,
        `// import { d } from "../jobs/jobs.dashboard.ts";`,
        "",
      ].join("\n"),
    ],
    // Within the module, any file may use another.
    ["src/modules/jobs/jobs.api.ts", `import { c } from "./jobs.dashboard.ts";\n`],
  ]);
  assert.deepEqual(
    checkImports(files).map((v) => `${v.file}:${v.line}:${v.rule}`),
    ["src/modules/agents/agents.section.tsx:3:repo-via-module"],
  );
  // A known entry point is allowed, with its reason.
  const [entry] = Object.keys(ENTRY_POINTS);
  const owner = entry.split("/")[2];
  const known = new Map([
    [entry, `import * as repo from "./${owner}.repo.ts";\n`],
    [
      "src/modules/other/other.service.ts",
      `import { x } from "../${owner}/${entry.split("/")[3]}";\n`,
    ],
  ]);
  assert.deepEqual(checkImports(known), []);
});

Deno.test("boundaries: src/chain/ never imports src/http/", () => {
  assert.deepEqual(
    rules("src/chain/sender.ts", `import { ApiError } from "../http/errors.ts";\n`),
    ["chain-imports-http"],
  );
  assert.deepEqual(
    rules("src/modules/x/x.api.ts", `import { g } from "../../http/auth.ts";\n`),
    [],
  );
});

Deno.test("boundaries: SQL only in repo files, src/db/ and src/queue/", () => {
  const sql = "const rows = await deps.sql<Row[]>`select 1`;\nawait tx`delete from t`;\n";
  assert.deepEqual(rules("src/modules/payments/payments.checkout.ts", sql), [
    "sql-outside-repo",
    "sql-outside-repo",
  ]);
  assert.deepEqual(rules("src/chain/x.ts", "await this.opts.sql`select 1`;\n"), [
    "sql-outside-repo",
  ]);
  assert.deepEqual(rules("src/chain/x.ts", "await c.unsafe(text);\n"), ["sql-outside-repo"]);
  // A row type with several fields (`;` inside the type argument) is SQL all the same.
  assert.deepEqual(
    rules("src/modules/x/x.views.ts", "await sql<{ a: bigint; b: bigint }[]>`select 1`;\n"),
    ["sql-outside-repo"],
  );
  assert.deepEqual(rules("src/modules/payments/payments.repo.ts", sql), []);
  assert.deepEqual(rules("src/db/migrate.ts", sql), []);
  assert.deepEqual(rules("src/queue/queue.ts", "tx.unsafe(text)"), []);
  // Comments and other tagged templates are not SQL.
  assert.deepEqual(rules("src/x.ts", "// await sql`select 1`\nconst h = html`<p>`;\n"), []);
});

Deno.test("boundaries: modules are src/modules/<name>/ or a top-level folder of src/", () => {
  assert.equal(moduleOf("src/modules/keys/keys.repo.ts"), "modules/keys");
  assert.equal(moduleOf("src/chain/watcher.repo.ts"), "chain");
  assert.equal(moduleOf("src/service.ts"), "");
});

Deno.test("boundaries: the script fails on a violating tree and passes on this one", async () => {
  const root = await Deno.makeTempDir();
  try {
    await Deno.mkdir(join(root, "src/modules/keys"), { recursive: true });
    await Deno.mkdir(join(root, "src/modules/jobs"), { recursive: true });
    await Deno.writeTextFile(
      join(root, "src/modules/keys/keys.service.ts"),
      `import * as m from "../merchants/merchants.repo.ts";\nexport const q = (sql: any) => sql\`select 1\`;\n`,
    );
    await Deno.writeTextFile(
      join(root, "src/modules/jobs/jobs.dashboard.ts"),
      `import * as repo from "./jobs.repo.ts";\n`,
    );
    await Deno.writeTextFile(
      join(root, "src/modules/keys/keys.section.tsx"),
      `import { j } from "../jobs/jobs.dashboard.ts";\n`,
    );
    const found = await checkTree(root);
    assert.deepEqual(found.map((v) => `${v.file}:${v.line}:${v.rule}`), [
      "src/modules/keys/keys.section.tsx:1:repo-via-module",
      "src/modules/keys/keys.service.ts:1:repo-import",
      "src/modules/keys/keys.service.ts:2:sql-outside-repo",
    ]);
    const script = new URL("../../scripts/check-boundaries.ts", import.meta.url).pathname;
    const run = (dir: string) =>
      new Deno.Command(Deno.execPath(), {
        args: ["run", "--allow-read", script, dir],
        stdout: "null",
        stderr: "null",
      }).output();
    assert.equal((await run(root)).code, 1);
    assert.equal((await run(new URL("../../", import.meta.url).pathname)).code, 0);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

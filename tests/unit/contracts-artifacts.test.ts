/**
 * The committed contract artifacts must match their sources: same input hash (compiler, settings,
 * our *.sol and every OpenZeppelin file they import), and, since a full compile takes only a few
 * seconds, the same ABI and bytecode when compiled again now.
 */
import assert from "node:assert/strict";
import {
  ARTIFACTS_DIR,
  collectSources,
  compileAll,
  computeInputHash,
  listContractFiles,
} from "../../src/chain/contracts/compile.ts";
import * as artifacts from "../../src/chain/contracts/artifacts/index.ts";

const STALE = "run `deno task contracts` and commit src/chain/contracts/artifacts/";

interface Artifact {
  contractName: string;
  inputHash: string;
  abi: readonly unknown[];
  bytecode: string;
}
const committed = Object.values(artifacts) as readonly Artifact[];

Deno.test("contract artifacts: every .sol file has an artifact named after it", async () => {
  const files = await listContractFiles();
  assert.ok(files.length > 0, "no .sol files found");
  for (const file of files) {
    const name = file.replace(/\.sol$/, "");
    const stat = await Deno.stat(`${ARTIFACTS_DIR}${name}.ts`).catch(() => undefined);
    assert.ok(stat?.isFile, `${file} has no artifacts/${name}.ts; ${STALE}`);
    assert.ok(
      committed.some((a) => a.contractName === name),
      `artifacts/index.ts does not export ${name}; ${STALE}`,
    );
  }
});

Deno.test("contract artifacts: input hash matches the current sources", async () => {
  const hash = await computeInputHash(await collectSources());
  for (const artifact of committed) {
    assert.equal(artifact.inputHash, hash, `${artifact.contractName} is stale; ${STALE}`);
  }
});

Deno.test("contract artifacts: recompiling gives the committed ABI and bytecode", async () => {
  const result = await compileAll();
  assert.deepEqual(
    committed.map((a) => a.contractName).sort(),
    result.contracts.map((c) => c.contractName).sort(),
    `the set of contracts changed; ${STALE}`,
  );
  for (const compiled of result.contracts) {
    const artifact = committed.find((a) => a.contractName === compiled.contractName)!;
    assert.equal(artifact.inputHash, result.inputHash, `${compiled.contractName}: ${STALE}`);
    assert.deepEqual(artifact.abi, compiled.abi, `${compiled.contractName} ABI differs; ${STALE}`);
    assert.equal(
      artifact.bytecode,
      compiled.bytecode,
      `${compiled.contractName} bytecode differs; ${STALE}`,
    );
  }
});

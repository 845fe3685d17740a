/**
 * `deno task contracts`: compiles every `*.sol` in this folder with solc-js (standard JSON) and
 * writes one committed TypeScript artifact per contract under `artifacts/`, plus `artifacts/index.ts`.
 *
 * Each artifact carries `inputHash`: SHA-256 over the compiler version, the settings and every
 * source unit the compilation read (ours and the OpenZeppelin files they import), so a test can
 * tell that an artifact no longer matches its sources without trusting file timestamps.
 */
import solc from "solc";
import { fileURLToPath } from "node:url";

export const CONTRACTS_DIR = fileURLToPath(new URL(".", import.meta.url));
export const ARTIFACTS_DIR = fileURLToPath(new URL("./artifacts/", import.meta.url));
export const PROJECT_ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const OZ_PREFIX = "@openzeppelin/contracts/";
const OZ_DIR = `${PROJECT_ROOT}node_modules/@openzeppelin/contracts/`;

/** Compiler settings; part of the input hash, so changing them makes every artifact stale. */
export const SETTINGS = {
  optimizer: { enabled: true, runs: 200 },
  evmVersion: "cancun",
  outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } },
} as const;

/** Source unit name → content, sorted by name. Ours are named by file name (`TestUSDC.sol`). */
export type Sources = Record<string, { content: string }>;

export interface CompiledContract {
  contractName: string;
  sourceName: string;
  abi: unknown[];
  bytecode: `0x${string}`;
}

export interface CompileResult {
  compilerVersion: string;
  inputHash: string;
  contracts: CompiledContract[];
  warnings: string[];
}

interface SolcMessage {
  severity: "error" | "warning" | "info";
  formattedMessage?: string;
  message: string;
}

interface SolcOutput {
  errors?: SolcMessage[];
  contracts?: Record<
    string,
    Record<string, { abi: unknown[]; evm?: { bytecode?: { object?: string } } }>
  >;
}

export class SolcError extends Error {
  constructor(public readonly messages: string[]) {
    super(`solc reported ${messages.length} error(s):\n\n${messages.join("\n")}`);
    this.name = "SolcError";
  }
}

/** The full solc version string, e.g. `0.8.37+commit.f401782d.Emscripten.clang`. */
export function compilerVersion(): string {
  return solc.version();
}

/** Our own `*.sol` files in this folder, sorted by name. */
export async function listContractFiles(dir = CONTRACTS_DIR): Promise<string[]> {
  const names: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if (entry.isFile && entry.name.endsWith(".sol")) names.push(entry.name);
  }
  return names.sort();
}

/** solc's import callback: only OpenZeppelin, read from node_modules. */
function readImport(path: string): { contents: string } | { error: string } {
  if (!path.startsWith(OZ_PREFIX) || path.split("/").includes("..")) {
    return {
      error: `import "${path}" is outside ${OZ_PREFIX} (the only library we compile against)`,
    };
  }
  try {
    return { contents: Deno.readTextFileSync(OZ_DIR + path.slice(OZ_PREFIX.length)) };
  } catch (e) {
    return { error: `cannot read ${path} from ${OZ_DIR}: ${e instanceof Error ? e.message : e}` };
  }
}

function runSolc(input: unknown, onImport = readImport): SolcOutput {
  return JSON.parse(solc.compile(JSON.stringify(input), { import: onImport })) as SolcOutput;
}

function throwOnErrors(output: SolcOutput): string[] {
  const messages = output.errors ?? [];
  const text = (m: SolcMessage) => (m.formattedMessage ?? m.message).trimEnd();
  const errors = messages.filter((m) => m.severity === "error").map(text);
  if (errors.length) throw new SolcError(errors);
  return messages.filter((m) => m.severity === "warning").map(text);
}

function sortedSources(entries: [string, string][]): Sources {
  entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return Object.fromEntries(entries.map(([name, content]) => [name, { content }]));
}

async function readOurSources(dir: string): Promise<[string, string][]> {
  const ours: [string, string][] = [];
  for (const name of await listContractFiles(dir)) {
    ours.push([name, await Deno.readTextFile(dir + name)]);
  }
  return ours;
}

/** Runs solc on our sources, recording every import it reads, so the hash covers exactly those. */
async function compileRecording(
  dir: string,
  settings: unknown,
): Promise<{ output: SolcOutput; warnings: string[]; sources: Sources }> {
  const ours = await readOurSources(dir);
  const imported: [string, string][] = [];
  const output = runSolc(
    {
      language: "Solidity",
      sources: Object.fromEntries(ours.map(([name, content]) => [name, { content }])),
      settings,
    },
    (path) => {
      const result = readImport(path);
      if ("contents" in result) imported.push([path, result.contents]);
      return result;
    },
  );
  const warnings = throwOnErrors(output);
  return { output, warnings, sources: sortedSources([...ours, ...imported]) };
}

/**
 * Every source unit the compilation reads: our `*.sol` files and, transitively, the OpenZeppelin
 * files they import. solc resolves the imports itself in an analysis-only run (no code
 * generation; `stopAfter: "parsing"` would not resolve imports), so the set is exactly what the
 * real compilation reads.
 */
export async function collectSources(dir = CONTRACTS_DIR): Promise<Sources> {
  const settings = { outputSelection: { "*": { "": ["ast"] } } };
  return (await compileRecording(dir, settings)).sources;
}

/** Recursively sorts object keys so JSON.stringify is canonical. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.keys(value).sort().map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}

/** SHA-256 (hex) over compiler version, settings and every source's name and content. */
export async function computeInputHash(
  sources: Sources,
  version = compilerVersion(),
  settings: unknown = SETTINGS,
): Promise<string> {
  const names = Object.keys(sources).sort();
  const payload = JSON.stringify(canonical({
    compilerVersion: version,
    settings,
    sources: names.map((name) => [name, sources[name].content]),
  }));
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(payload));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Compiles every contract in `dir`; throws {@link SolcError} on any solc error. */
export async function compileAll(dir = CONTRACTS_DIR): Promise<CompileResult> {
  const version = compilerVersion();
  const { output, warnings, sources } = await compileRecording(dir, SETTINGS);
  const ours = new Set(await listContractFiles(dir));
  const contracts: CompiledContract[] = [];
  for (const [sourceName, byName] of Object.entries(output.contracts ?? {})) {
    if (!ours.has(sourceName)) continue;
    for (const [contractName, compiled] of Object.entries(byName)) {
      if (contracts.some((c) => c.contractName === contractName)) {
        throw new Error(`contract ${contractName} is defined twice (${sourceName})`);
      }
      const object = compiled.evm?.bytecode?.object ?? "";
      contracts.push({ contractName, sourceName, abi: compiled.abi, bytecode: `0x${object}` });
    }
  }
  contracts.sort((a, b) => (a.contractName < b.contractName ? -1 : 1));
  return {
    compilerVersion: version,
    inputHash: await computeInputHash(sources, version),
    contracts,
    warnings,
  };
}

/** The TypeScript module for one artifact (before `deno fmt`). */
export function renderArtifact(
  contract: CompiledContract,
  meta: { inputHash: string; compilerVersion: string },
): string {
  const { contractName, sourceName, abi, bytecode } = contract;
  return `// Generated by src/chain/contracts/compile.ts from ${sourceName}; do not edit.
// Rebuild with \`deno task contracts\`.

export const ${contractName} = {
  contractName: ${JSON.stringify(contractName)},
  compilerVersion: ${JSON.stringify(meta.compilerVersion)},
  inputHash: ${JSON.stringify(meta.inputHash)},
  abi: ${JSON.stringify(abi, null, 2)} as const,
  bytecode: ${JSON.stringify(bytecode)} as const,
} as const;
`;
}

export function renderIndex(contracts: CompiledContract[]): string {
  const lines = contracts.map((c) => `export { ${c.contractName} } from "./${c.contractName}.ts";`);
  return `// Generated by src/chain/contracts/compile.ts; do not edit.\n\n${lines.join("\n")}\n`;
}

/**
 * Writes every artifact and the index into `dir`, removes artifacts of contracts that no longer
 * exist, and formats the result with `deno fmt` so the committed files pass `deno fmt --check`.
 */
export async function writeArtifacts(
  result: CompileResult,
  dir = ARTIFACTS_DIR,
): Promise<string[]> {
  await Deno.mkdir(dir, { recursive: true });
  const written = new Set<string>();
  for (const contract of result.contracts) {
    const file = `${contract.contractName}.ts`;
    await Deno.writeTextFile(dir + file, renderArtifact(contract, result));
    written.add(file);
  }
  await Deno.writeTextFile(dir + "index.ts", renderIndex(result.contracts));
  written.add("index.ts");
  for await (const entry of Deno.readDir(dir)) {
    if (entry.isFile && entry.name.endsWith(".ts") && !written.has(entry.name)) {
      await Deno.remove(dir + entry.name);
    }
  }
  const paths = [...written].sort().map((f) => dir + f);
  const fmt = await new Deno.Command(Deno.execPath(), {
    args: ["fmt", "--quiet", ...paths],
    cwd: PROJECT_ROOT,
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  if (!fmt.success) throw new Error(`deno fmt failed on ${dir}`);
  return paths;
}

if (import.meta.main) {
  const started = performance.now();
  try {
    const result = await compileAll();
    for (const warning of result.warnings) console.warn(warning);
    const paths = await writeArtifacts(result);
    const ms = Math.round(performance.now() - started);
    console.log(
      `compiled ${result.contracts.length} contract(s) with solc ${result.compilerVersion} ` +
        `in ${ms} ms; inputHash ${result.inputHash}`,
    );
    for (const path of paths) console.log(`  wrote ${path.slice(PROJECT_ROOT.length)}`);
  } catch (e) {
    console.error(e instanceof SolcError ? e.message : e);
    Deno.exit(1);
  }
}

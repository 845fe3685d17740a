/**
 * A strict reader of the Prometheus text format (0.0.4): every line is a comment (`# HELP`,
 * `# TYPE` with a known type), blank, or `name{label="value",…} number`. Anything else throws.
 */
export interface PromSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+-?\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?\s*/gy;
const TYPES = new Set(["counter", "gauge", "histogram", "summary", "untyped"]);

export function parsePrometheus(text: string): PromSample[] {
  const out: PromSample[] = [];
  for (const [i, line] of text.split("\n").entries()) {
    if (line.trim() === "") continue;
    if (line.startsWith("#")) {
      const m = /^# (HELP|TYPE) (\S+)(?: (.*))?$/.exec(line);
      if (!m || !NAME.test(m[2])) throw new Error(`line ${i + 1}: bad comment: ${line}`);
      if (m[1] === "TYPE" && !TYPES.has(m[3] ?? "")) throw new Error(`line ${i + 1}: ${line}`);
      continue;
    }
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`line ${i + 1}: not a sample: ${line}`);
    const labels: Record<string, string> = {};
    if (m[3]) {
      LABEL.lastIndex = 0;
      let consumed = 0;
      for (let l; (l = LABEL.exec(m[3]));) {
        labels[l[1]] = l[2].replace(/\\n/g, "\n").replace(/\\"/g, '"').replace(/\\\\/g, "\\");
        consumed = LABEL.lastIndex;
      }
      if (consumed !== m[3].length) throw new Error(`line ${i + 1}: bad labels: ${line}`);
    }
    const value = m[4] === "+Inf" ? Infinity : m[4] === "-Inf" ? -Infinity : Number(m[4]);
    if (Number.isNaN(value) && m[4] !== "NaN") throw new Error(`line ${i + 1}: bad value: ${line}`);
    out.push({ name: m[1], labels, value });
  }
  return out;
}

/** The value of the one sample with this name whose labels include `labels`. */
export function sample(
  samples: PromSample[],
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  const found = samples.filter((s) =>
    s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)
  );
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match`);
  return found[0]?.value;
}

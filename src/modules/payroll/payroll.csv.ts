/**
 * A payroll CSV (recipient, amount, label) from the dashboard, parsed with csv-parse and checked
 * line by line with the run request's own rules, so the preview shows every bad line at once.
 */
import { parse } from "csv-parse/sync";
import { MAX_RECIPIENTS } from "./payroll.rules.ts";
import { parseRunBody, RunBodyError } from "./payroll.schemas.ts";
import type { RecipientInput } from "./payroll.types.ts";

export interface CsvLine {
  /** 1-based line number in the file. */
  line: number;
  recipient: string;
  amount: string;
  label: string;
  error?: string;
  parsed?: RecipientInput;
}

export interface CsvPreview {
  lines: CsvLine[];
  /** A problem with the file itself (not CSV, empty, too many lines). */
  fileError?: string;
  /** Every line valid: what the run gets. */
  recipients?: RecipientInput[];
}

const HEADER = /^(recipient|recipientsca|address|wallet)$/i;

export function parsePayrollCsv(text: string): CsvPreview {
  let records: { record: string[]; info: { lines: number } }[];
  try {
    // `info` gives each record's line in the file (blank lines and quoted newlines counted).
    records = parse(text, {
      bom: true,
      trim: true,
      skip_empty_lines: true,
      relax_column_count: true,
      info: true,
    }) as unknown as typeof records;
  } catch (e) {
    return { lines: [], fileError: `The file is not valid CSV: ${(e as Error).message}` };
  }
  if (records.length && HEADER.test(records[0].record[0] ?? "")) records = records.slice(1);
  if (!records.length) return { lines: [], fileError: "The file has no recipients." };
  if (records.length > MAX_RECIPIENTS) {
    return { lines: [], fileError: `The file has ${records.length} lines; at most 5,000.` };
  }
  const lines = records.map(({ record: rec, info }): CsvLine => {
    const [recipient = "", amount = "", label = ""] = rec;
    const line: CsvLine = { line: info.lines, recipient, amount, label };
    if (rec.length > 3) {
      line.error = "Expected 3 columns: recipient, amount, label.";
      return line;
    }
    try {
      const one = parseRunBody({
        recipients: [{ recipientSCA: recipient, amount, label: label || undefined }],
      }, "any");
      line.parsed = one.recipients[0];
    } catch (e) {
      if (!(e instanceof RunBodyError)) throw e;
      // "recipients[0].amount must be …" → "amount must be …" for a line of the file.
      line.error = e.message.replace(/^recipients\[0\]\.?/, "").replace(
        /^recipientSCA/,
        "recipient",
      );
    }
    return line;
  });
  const ok = lines.every((l) => !l.error);
  return { lines, recipients: ok ? lines.map((l) => l.parsed!) : undefined };
}

/**
 * For statements that find their rows by id and move them only from some statuses: the status
 * test written so that no partial index on status can serve the statement (the planner cannot
 * match `coalesce(status, '')` to an index's predicate), so each row is fetched by its primary
 * key. Written plainly (`status in (...)`), statistics read while few rows were open let the
 * planner scan every open row through the partial index instead, for each statement: a cost that
 * grows with a backlog (a chain down, thousands of rows open) rather than with the statement.
 */
import type { Db } from "./client.ts";

/** `coalesce(<column>, '') in (<statuses>)`; `column` may be qualified (`c.status`). */
export const statusIn = (sql: Db, column: string, statuses: readonly string[]) =>
  sql`coalesce(${sql(column)}, '') in ${sql(statuses as string[])}`;

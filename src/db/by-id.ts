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

/** What `planned` needs of a postgres.js query: its options, read when it is sent. */
interface Unsent {
  options: { prepare?: boolean };
}

/**
 * Sends `query` as an unnamed statement, so PostgreSQL plans it with its parameters' values each
 * time it runs rather than from a cached generic plan. For the group statements over a list of
 * ids against tables that grow fast (the paid path's charges): a prepared statement's generic
 * plan is fixed at its sixth run, and made while the table held a few hundred rows it is a hash
 * join over a scan of the whole table, kept until an ANALYZE invalidates it (measured: the
 * served marks at 119 µs a row at 30,000 charges, 10 µs planned each time). It costs the
 * planning, and one more round trip (postgres.js describes an unnamed statement first). Must be
 * called before the query is awaited (postgres.js reads the option when it sends it).
 */
export function planned<Q>(query: Q): Q {
  (query as unknown as Unsent).options.prepare = false;
  return query;
}

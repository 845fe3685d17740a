/**
 * Deps: what every module receives. Built once in `src/service.ts`; tests build their own with
 * an isolated database and a manual clock.
 */
import type { Clock } from "./clock.ts";
import type { Config } from "./config.ts";
import type { Sql } from "./db/client.ts";
import type { Logger } from "./log.ts";
import type { Queue } from "./queue/queue.ts";
import type { Chain } from "./chain/index.ts";
import type { RateLimiter } from "./http/rate-limit.ts";
import type { Mailer } from "./modules/mail/mail.types.ts";
import type { Liveness } from "./db/liveness.ts";

export interface Deps {
  config: Config;
  sql: Sql;
  /**
   * The x402 paid path's group writes (x402.batched.mirror.ts): one connection of its own, which
   * plans without table scans (`NO_TABLE_SCANS`). Absent (tests' own deps): `sql`.
   */
  paidSql?: Sql;
  queue: Queue;
  chain: Chain;
  limiter: RateLimiter;
  mailer: Mailer;
  clock: Clock;
  log: Logger;
  /**
   * This process's liveness claim (src/db/liveness.ts): the owner of the work it holds in the
   * database during an outside call. Absent (tests' own deps): that work has no owner and is
   * swept by age only.
   */
  liveness?: Liveness;
}

import { DEFAULT_POLL_INTERVAL_MS } from "../src/chain/profiles.ts";

/**
 * The settings a deployment runs with where the test service departs from them: the tests read
 * the chains' logs every 50 ms (tests/helpers/service.ts), so that a test sees an event at once;
 * a deployment reads them every 500 ms. A bench measures what a deployment does, so its service
 * polls like one. At 50 ms the two chains' idle polling cost the x402 bench's service about
 * 100 µs of its CPU per paid call (docs/benchmarks.md).
 */
export const DEPLOYED_POLLING = { CHAIN_POLL_INTERVAL_MS: String(DEFAULT_POLL_INTERVAL_MS) };

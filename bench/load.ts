/**
 * A load generator in its own process (autocannon), so it does not share the service's event
 * loop. Reads a JSON job from argv[0]; prints a JSON summary.
 */
import autocannon from "autocannon";

const job = JSON.parse(Deno.args[0]) as {
  url: string;
  method: string;
  headers: Record<string, string>;
  body?: string;
  connections: number;
  duration: number;
};
const result = await autocannon({
  url: job.url,
  method: job.method as "POST",
  headers: job.headers,
  body: job.body,
  connections: job.connections,
  duration: job.duration,
});
console.log(JSON.stringify({
  requests: result.requests.total,
  rps: result.requests.average,
  p50: result.latency.p50,
  p99: result.latency.p99,
  non2xx: result.non2xx,
  errors: result.errors,
  timeouts: result.timeouts,
}));

/**
 * A load generator in its own process (autocannon), so it does not share the service's event
 * loop. Reads a JSON job, or an array of jobs run at the same time (one generator process for
 * several targets, so its own cost does not grow with them), from argv[0]; prints a JSON summary
 * (an array for an array).
 */
import autocannon from "autocannon";

interface Job {
  url: string;
  method: string;
  headers: Record<string, string>;
  body?: string;
  connections: number;
  duration: number;
}

async function run(job: Job) {
  const result = await autocannon({
    url: job.url,
    method: job.method as "POST",
    headers: job.headers,
    body: job.body,
    connections: job.connections,
    duration: job.duration,
  });
  return {
    requests: result.requests.total,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
  };
}

const input = JSON.parse(Deno.args[0]) as Job | Job[];
console.log(
  JSON.stringify(Array.isArray(input) ? await Promise.all(input.map(run)) : await run(input)),
);

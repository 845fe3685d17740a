/**
 * The service alone in its own process, for the abuse bench: its RSS is then the service's.
 * argv[0]: extra environment (JSON). Prints `{"port": n}` once listening; stops when stdin closes.
 */
import { startTestService } from "../tests/helpers/service.ts";

const svc = await startTestService({ env: JSON.parse(Deno.args[0] ?? "{}") });
console.log(JSON.stringify({ port: svc.port }));
for await (const _ of Deno.stdin.readable) { /* wait for the parent to close stdin */ }
await svc.close();

/**
 * A stand-in third-party API for the x402 benches, in its own process (a real upstream is
 * another machine, not a task on the service's event loop): answers every request with a small
 * JSON body, prints its port on the first line, and exits when its stdin closes.
 */
const server = Deno.serve(
  { hostname: "127.0.0.1", port: 0, onListen: ({ port }) => console.log(port) },
  () => Response.json({ temperature: 21.5 }),
);
for await (const _ of Deno.stdin.readable) { /* wait for the parent to go */ }
await server.shutdown();

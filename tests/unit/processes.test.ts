/**
 * processAlive reads a process's state, not just whether its /proc entry is there: a process that
 * has exited but is not yet reaped (a zombie) is not running. A local chain node left by a killed
 * service is such a process once stopped: PID 1 reaps it about a second later, and the next start
 * used to wait for that (src/chain/local-node.ts `stopLeftover`).
 */
import assert from "node:assert/strict";
import { processAlive } from "../../src/processes.ts";
import { waitFor } from "../helpers/poll.ts";

Deno.test("processAlive: running, a zombie not yet reaped, and gone", async () => {
  // sh starts a background sleep, prints its pid, and becomes another sleep (exec), which never
  // reaps its child: once killed, the background sleep stays a zombie until its parent ends.
  const parent = new Deno.Command("sh", {
    args: ["-c", "sleep 300 & echo $!; exec sleep 300"],
    stdout: "piped",
  }).spawn();
  const reader = parent.stdout.getReader();
  const { value } = await reader.read();
  reader.releaseLock();
  const child = Number(new TextDecoder().decode(value).trim());
  try {
    assert.ok(child > 0);
    assert.equal(await processAlive(child), true, "the sleep is running");
    assert.equal(await processAlive(parent.pid), true);

    Deno.kill(child, "SIGTERM");
    const state = () =>
      Deno.readTextFile(`/proc/${child}/stat`).then((s) => s.slice(s.lastIndexOf(")") + 2)[0]);
    await waitFor(async () => (await state()) === "Z", { what: "the sleep to be a zombie" });
    assert.ok(Deno.statSync(`/proc/${child}`), "its /proc entry is still there");
    assert.equal(await processAlive(child), false, "a zombie is not running");

    assert.equal(await processAlive(2 ** 22 + 1), false, "no such pid");
  } finally {
    parent.kill("SIGKILL");
    await parent.status;
    await parent.stdout.cancel().catch(() => {});
  }
});

/** Facts about other processes on this machine, read from /proc (Linux). */

/**
 * Whether process `pid` is running: false when it is gone or a zombie (state Z: it has exited
 * and waits for its parent to reap it). A process whose parent was killed is reaped by PID 1,
 * which may take a second or more (measured: ~1.1 s on the CI machine), so waiting for its
 * /proc entry to disappear waits for the reaper, not for the process.
 */
export async function processAlive(pid: number): Promise<boolean> {
  try {
    const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
    // "pid (comm) S ...": comm may hold spaces and parentheses; the state follows the last ")".
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state !== "Z" && state !== "X" && state !== "";
  } catch {
    return false;
  }
}

/** Starts bench/upstream.ts in a child process; `url` is its base, `close` stops it. */
export async function upstreamProcess(): Promise<{ url: string; close: () => Promise<void> }> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-net", new URL("./upstream.ts", import.meta.url).pathname],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error("the bench upstream exited before listening");
    text += value;
  }
  reader.releaseLock();
  child.stdout.cancel().catch(() => {});
  const port = Number(text.split("\n")[0].trim());
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      await child.stdin.close().catch(() => {});
      await child.status;
    },
  };
}

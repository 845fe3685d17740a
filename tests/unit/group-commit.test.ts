import assert from "node:assert/strict";
import { setImmediate } from "node:timers";
import { groupCommit, type Waiter } from "../../src/db/group-commit.ts";

/** A writer whose writes finish when the test says: each write's group is recorded. */
function gatedWriter<I, O>(answer: (item: I) => O) {
  const groups: I[][] = [];
  const gates: PromiseWithResolvers<void>[] = [];
  const write = async (group: Waiter<I, O>[]) => {
    groups.push(group.map((w) => w.item));
    const gate = Promise.withResolvers<void>();
    gates.push(gate);
    await gate.promise;
    for (const w of group) w.resolve(answer(w.item));
  };
  /** Lets the oldest unfinished write finish, then lets the queue move on. */
  const open = async (i: number) => {
    gates[i].resolve();
    for (let k = 0; k < 5; k++) await Promise.resolve();
  };
  return { groups, write, open };
}

/**
 * Turns of the event loop (`setImmediate`, what `gather` waits for) until `done`, at most 50; or,
 * without `done`, three of them (for what must not happen). Not a timer: a timer's turn may come
 * before the immediates under load (this test failed so in a loaded CI run).
 */
async function turns(done?: () => boolean) {
  for (let i = 0; i < (done ? 50 : 3) && !done?.(); i++) {
    await new Promise((r) => setImmediate(r));
  }
}

Deno.test("group commit: one write at a time, what waited goes together", async () => {
  const w = gatedWriter<number, string>((n) => `#${n}`);
  const add = groupCommit(w.write);
  const key = {};
  const first = add(key, 1);
  const later = [add(key, 2), add(key, 3), add(key, 4)];
  assert.deepEqual(w.groups, [[1]], "the first is written at once, alone");
  await w.open(0);
  assert.equal(await first, "#1");
  assert.deepEqual(w.groups, [[1], [2, 3, 4]]);
  await w.open(1);
  assert.deepEqual(await Promise.all(later), ["#2", "#3", "#4"]);
  // Another key has its own writer: not held up by this one's write in flight.
  const again = add(key, 5);
  const other = add({}, 6);
  assert.deepEqual(w.groups.slice(2), [[5], [6]]);
  await w.open(2);
  await w.open(3);
  assert.deepEqual([await again, await other], ["#5", "#6"]);
});

Deno.test("group commit: at most `max`, and items kept apart wait for the next write", async () => {
  const w = gatedWriter<string, string>((s) => s.toUpperCase());
  const add = groupCommit(w.write, { max: 3, apart: (s) => s[0] });
  const key = {};
  const all = [add(key, "a1"), add(key, "b1"), add(key, "a2"), add(key, "c1"), add(key, "d1")];
  all.push(add(key, "e1"));
  await w.open(0);
  assert.deepEqual(w.groups[1], ["b1", "a2", "c1"], "three at most");
  await w.open(1);
  assert.deepEqual(w.groups[2], ["d1", "e1"]);
  await w.open(2);
  assert.deepEqual(await Promise.all(all), ["A1", "B1", "A2", "C1", "D1", "E1"]);
  assert.equal(w.groups.length, 3);
});

Deno.test("group commit: a failed write rejects those it did not answer; the queue goes on", async () => {
  let calls = 0;
  const add = groupCommit<number, number>(async (group) => {
    calls++;
    await Promise.resolve();
    group[0].resolve(group[0].item * 10);
    if (calls === 2) throw new Error("the statement failed");
    for (const w of group.slice(1)) w.resolve(w.item * 10);
  });
  const key = {};
  const [first, kept, failed] = await Promise.allSettled([add(key, 1), add(key, 2), add(key, 3)]);
  assert.deepEqual(first, { status: "fulfilled", value: 10 });
  assert.deepEqual(kept, { status: "fulfilled", value: 20 }, "answered before the failure");
  assert.equal(failed.status, "rejected");
  assert.match(String((failed as PromiseRejectedResult).reason), /the statement failed/);
  assert.equal(await add(key, 4), 40, "the next write still runs");
  assert.equal(calls, 3);
});

Deno.test("group commit: with `alone`, a failed group's unanswered items are written one by one", async () => {
  const errors: [string, number][] = [];
  const alone: number[] = [];
  let writes = 0;
  const add = groupCommit<number, number>(async (group) => {
    writes++;
    await Promise.resolve();
    group[0].resolve(group[0].item * 10);
    if (group.length > 1) throw new Error("one bad item spoils the statement");
  }, {
    alone: {
      write: async (n) => {
        alone.push(n);
        await Promise.resolve();
        if (n === 3) throw new Error("3 is bad");
        return n * 100;
      },
      failed: (e, items) => errors.push([String(e), items.length]),
    },
  });
  const key = {};
  const out = await Promise.allSettled([add(key, 1), add(key, 2), add(key, 3), add(key, 4)]);
  assert.deepEqual(out.map((o) => o.status === "fulfilled" ? o.value : "rejected"), [
    10, // its own write
    20, // answered by the failed group before it failed: not written again
    "rejected", // bad on its own too
    400,
  ]);
  assert.deepEqual(alone.sort(), [3, 4], "only what the group left unanswered");
  assert.equal(writes, 2);
  assert.deepEqual(errors, [["Error: one bad item spoils the statement", 3]]);
  assert.equal(await add(key, 5), 50, "the queue goes on");
});

Deno.test("group commit: `gather` waits one turn before a write that follows another, not before the first", async () => {
  const w = gatedWriter<number, number>((n) => n);
  const add = groupCommit(w.write, { gather: true });
  const key = {};
  const first = add(key, 1);
  assert.deepEqual(w.groups, [[1]], "an item with no write in flight is written at once");
  const second = add(key, 2);
  await w.open(0);
  assert.equal(await first, 1);
  // The write is over; the next waits for a turn of the event loop, where more items join it.
  assert.deepEqual(w.groups, [[1]]);
  const third = add(key, 3);
  await turns(() => w.groups.length === 2);
  assert.deepEqual(w.groups, [[1], [2, 3]]);
  await w.open(1);
  assert.deepEqual([await second, await third], [2, 3]);
  // Without it, the next write starts at once (the test above): only [2] would have gone.
  const plain = gatedWriter<number, number>((n) => n);
  const addPlain = groupCommit(plain.write);
  const p1 = addPlain(key, 1);
  const p2 = addPlain(key, 2);
  await plain.open(0);
  addPlain(key, 3);
  assert.deepEqual(plain.groups, [[1], [2]]);
  await plain.open(1);
  await plain.open(2);
  assert.deepEqual([await p1, await p2], [1, 2]);
});

Deno.test("group commit: `pipeline` 2 sends a second write while the first is in flight, never a third", async () => {
  const w = gatedWriter<number, number>((n) => n);
  const add = groupCommit(w.write, { gather: true, pipeline: 2 });
  const key = {};
  const answers = [add(key, 1)];
  assert.deepEqual(w.groups, [[1]], "the first at once");
  // While it is in flight, a second writer gathers one turn, then sends what came meanwhile.
  answers.push(add(key, 2), add(key, 3));
  assert.deepEqual(w.groups, [[1]]);
  await turns(() => w.groups.length === 2);
  assert.deepEqual(w.groups, [[1], [2, 3]], "two writes in flight");
  // Both in flight: the next items wait for one of them to finish.
  answers.push(add(key, 4), add(key, 5));
  await turns();
  assert.deepEqual(w.groups.length, 2, "never a third in flight");
  await w.open(1); // the second finishes first: its writer takes what waited
  await turns(() => w.groups.length === 3);
  assert.deepEqual(w.groups, [[1], [2, 3], [4, 5]]);
  // Both writers free at the same moment with one item waiting: one writes it, the other stops
  // (no empty write).
  answers.push(add(key, 6));
  await w.open(0);
  await w.open(2);
  await turns(() => w.groups.length === 4);
  await turns();
  assert.deepEqual(w.groups.slice(3), [[6]]);
  await w.open(3);
  assert.deepEqual(await Promise.all(answers), [1, 2, 3, 4, 5, 6]);
  assert.ok(w.groups.every((g) => g.length > 0));
});

import type { CompactionEntry, Step } from "./types.js";

/**
 * workingSet computes a session's working set from its log, as the
 * server does (store.WorkingSet): the steps the newest full compaction
 * entry names, in its order, followed by every step entry after it, each
 * replaced by its newest copy (in that compaction's `replaced` or in an
 * amendment after it, such as an action completed by a tool result sent
 * later). With no full compaction it is every step, amended likewise.
 *
 * @param steps - The step entries of the whole log (`GET /steps`), in any order.
 * @param compactions - The compaction entries of the whole log.
 * @returns The working set's steps, in order.
 */
export function workingSet(steps: readonly Step[], compactions: readonly CompactionEntry[]): Step[] {
  type Entry = { seq: number; step?: Step; compaction?: CompactionEntry };
  const entries: Entry[] = [];
  for (const step of steps) entries.push({ seq: step.number ?? 0, step });
  for (const compaction of compactions) entries.push({ seq: compaction.seq, compaction });
  entries.sort((a, b) => a.seq - b.seq);

  let last = -1;
  for (let i = entries.length - 1; i >= 0; i--) {
    const c = entries[i]?.compaction;
    if (c && !c.amend) {
      last = i;
      break;
    }
  }
  const order: number[] = [];
  const bySeq = new Map<number, Step>();
  const copies = new Map<number, Step>();
  const full = last >= 0 ? entries[last]?.compaction : undefined;
  if (full) {
    order.push(...(full.working ?? []));
    for (const e of entries.slice(0, last)) if (e.step) bySeq.set(e.seq, e.step);
    for (const r of full.replaced ?? []) copies.set(r.number ?? 0, r);
  }
  for (const e of entries.slice(last + 1)) {
    if (e.step) {
      order.push(e.seq);
      bySeq.set(e.seq, e.step);
    } else if (e.compaction) {
      for (const r of e.compaction.replaced ?? []) copies.set(r.number ?? 0, r);
    }
  }
  const out: Step[] = [];
  for (const seq of order) {
    const s = copies.get(seq) ?? bySeq.get(seq);
    if (s) out.push(s);
  }
  return out;
}

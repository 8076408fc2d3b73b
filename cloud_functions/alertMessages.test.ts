/**
 * lib/alertText.ts and lib/alertSignals.ts say what daemon/alerts/messages.py and signals.py say:
 * both run the shared table contracts/alert_messages.json, texts and figures exactly.
 */
import { describe, expect, test } from "vitest";
import { type AlertState, type Notice, step } from "./lib/alertMachine";
import { observeSites, plural, SIGNALS, type SiteView, subjectKey } from "./lib/alertSignals";
import { noticeText } from "./lib/alertText";
import { contract } from "./test.contracts";

type Said = { signal: string; kind: string; downForMs: number; text: string };
type Table = {
  notices: { signal: string; subject: string; notice: Notice; text: string }[];
  fleet: { name: string; site: SiteView; steps: { at: number; site?: Partial<SiteView>; expect: Said[] }[] }[];
};

const table = contract<Table>("alert_messages.json");

describe("each notice says the shared text", () => {
  test.each(table.notices.map((c) => [c.text, c] as const))("%s", (_, c) => {
    expect(noticeText(c.signal, c.subject, c.notice)).toBe(c.text);
  });
});

describe("the fleet is said with true figures (durations from when the signal went bad)", () => {
  test.each(table.fleet.map((c) => [c.name, c] as const))("%s", (_, c) => {
    const states = new Map<string, AlertState>();
    for (const [i, s] of c.steps.entries()) {
      const seen = observeSites([{ ...c.site, ...s.site }], s.at).sort((a, b) => (subjectKey(a) < subjectKey(b) ? -1 : 1));
      const said: Said[] = [];
      for (const one of seen) {
        const [next, notices] = step(SIGNALS[one.signal], states.get(subjectKey(one)) ?? null, one.observation);
        states.set(subjectKey(one), next);
        for (const n of notices) {
          said.push({ signal: one.signal, kind: n.kind, downForMs: n.downForMs, text: noticeText(one.signal, one.subject, n) });
        }
      }
      expect(said, `step ${i} at ${s.at}`).toEqual(s.expect);
    }
  });
});

test("counts are said in the right number", () => {
  expect([0, 1, 2].map((n) => plural(n, "episode"))).toEqual(["0 episodes", "1 episode", "2 episodes"]);
});

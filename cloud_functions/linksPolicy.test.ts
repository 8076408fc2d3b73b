/**
 * lib/links.ts keeps sync/policy/links.py's rules: the kinds, the explicit ones the `links` table
 * holds (the schema's validator), the window, and which metadata writes which link, from
 * contracts/links.json, which tests/contracts/test_links_contract.py runs too.
 */
import { describe, expect, test } from "vitest";
import { EXPLICIT, explicitLinks, KINDS, LATER, METADATA_KINDS, parseRef, WINDOW } from "./lib/links";
import { linkKind } from "./lib/validators";
import { contract } from "./test.contracts";

type Contract = {
  kinds: { kind: string; stored: string }[];
  later: string[];
  window: number;
  metadata: Record<string, string>;
  metadata_cases: { metadata: unknown; self?: string; links: { to: string; kind: string }[] }[];
};
const links = contract<Contract>("links.json");

describe("the links' rules (contracts/links.json)", () => {
  test("the kinds, the explicit ones, the later ones, the window and the metadata keys are the contract's", () => {
    expect([...KINDS]).toEqual(links.kinds.map((k) => k.kind));
    const explicit = links.kinds.filter((k) => k.stored === "explicit").map((k) => k.kind);
    expect([...EXPLICIT].sort()).toEqual([...explicit].sort());
    expect(linkKind.members.map((m) => m.value).sort()).toEqual([...explicit].sort());
    expect([...LATER]).toEqual(links.later);
    expect(WINDOW).toBe(links.window);
    expect(METADATA_KINDS).toEqual(links.metadata);
  });

  test.each(links.metadata_cases)("metadata $metadata writes its links", ({ metadata, self, links: expected }) => {
    const own = parseRef(self ?? "self:0")!;
    const written = explicitLinks(own, metadata).map((l) => ({ to: `${l.toSite}:${l.toId}`, kind: l.kind }));
    expect(written).toEqual(expected);
  });
});

/**
 * sites.ts registers the names daemon/config.py takes and refuses the others in its words: both run
 * contracts/site_names.json (tests/contracts/test_site_names.py is the Python side).
 */
import { describe, expect, test } from "vitest";
import { internal } from "./_generated/api";
import { SITE_NAME, SITE_NAME_RULE } from "./sites";
import { contract } from "./test.contracts";
import { backend, errorMessage } from "./test.setup";

const names = contract<{ pattern: string; rule: string; names: { name: string; ok: boolean }[] }>("site_names.json");

describe("site names (contracts/site_names.json)", () => {
  test("the rule is the contract's", () => {
    expect(SITE_NAME.source).toBe(`^${names.pattern}$`);
    expect(SITE_NAME.flags).toBe("");
    expect(SITE_NAME_RULE).toBe(names.rule);
  });

  test.each(names.names.map((c) => [JSON.stringify(c.name), c] as const))("register %s", async (_, c) => {
    const t = backend();
    const register = () => t.mutation(internal.sites.register, { name: c.name });
    if (c.ok) {
      expect(await register()).toMatchObject({ site: c.name });
    } else {
      expect(JSON.parse(await errorMessage(register()))).toEqual({ code: "INVALID", message: `site name ${JSON.stringify(c.name)}: ${names.rule}` });
    }
  });
});

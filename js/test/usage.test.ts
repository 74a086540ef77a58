import { describe, expect, it } from "vitest";
import type { UIMessage } from "../src/ui-message";
import { formatTotals, formatTurnUsage, turnUsage, usageTotals } from "../src/usage";

type Source = "reported" | "estimated" | null;

const turn = (id: string, usage: [number | null, number | null, Source] | "legacy", cost?: number): UIMessage => {
  const stored =
    usage === "legacy"
      ? { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 }
      : { prompt_tokens: usage[0], completion_tokens: usage[1], total_tokens: usage[0] === null || usage[1] === null ? null : usage[0] + usage[1], source: usage[2] };
  return { id, role: "assistant", parts: [], metadata: { model: "m", usage: stored, ...(cost === undefined ? {} : { cost_usd: cost }) } };
};
const user: UIMessage = { id: "u", role: "user", parts: [{ type: "text", text: "hi" }] };

describe("turn usage", () => {
  it("reads the stored source: reported, estimated, unknown; legacy counts are shown as they are", () => {
    expect(turnUsage(turn("a", [20, 6, "reported"], 0.0001)?.metadata)).toEqual({ source: "reported", total: 26, prompt: 20, completion: 6, cost: 0.0001 });
    expect(turnUsage(turn("b", [10, 3, "estimated"])?.metadata)).toEqual({ source: "estimated", total: 13, prompt: 10, completion: 3, cost: null });
    expect(turnUsage(turn("c", [null, null, null])?.metadata)).toEqual({ source: "unknown", total: null, prompt: null, completion: null, cost: null });
    expect(turnUsage(turn("d", "legacy")?.metadata)?.source).toBe("reported");
    expect(turnUsage(user.metadata)).toBeNull();
    expect(turnUsage({ model: "m", usage: null })?.source).toBe("unknown");
  });

  it("words estimates with ≈ and unknowns with n/a, never 0", () => {
    expect(formatTurnUsage(turnUsage(turn("a", [20, 6, "reported"], 0.0001).metadata)!)).toMatchObject({ tokens: "26 tokens", cost: "$0.000100" });
    expect(formatTurnUsage(turnUsage(turn("b", [10, 3, "estimated"], 0.00002).metadata)!)).toMatchObject({ tokens: "≈13 tokens", cost: "≈$0.000020" });
    const unknown = formatTurnUsage(turnUsage(turn("c", [null, null, null]).metadata)!);
    expect(unknown).toMatchObject({ tokens: "tokens n/a", cost: "cost n/a" });
    expect(unknown.title).toContain("unknown");
    expect(formatTurnUsage(turnUsage(turn("b", [10, 3, "estimated"]).metadata)!).title).toContain("estimated");
  });

  it("totals sum what is known and say what is not", () => {
    const reported = turn("a", [20, 6, "reported"], 0.5);
    const estimated = turn("b", [10, 3, "estimated"]);
    const unknown = turn("c", [null, null, null]);
    expect(usageTotals([user, reported, estimated, unknown])).toEqual({ turns: 3, tokens: 39, unknown: 1, estimated: 1, cost: 0.5, priced: 1, pricedEstimated: 0 });
    expect(formatTotals(usageTotals([user, reported, estimated, unknown]))).toBe("≈39 tokens (+1 turn n/a) · $0.500000 (+2 turns n/a)");
    expect(formatTotals(usageTotals([reported]))).toBe("26 tokens · $0.500000");
    expect(formatTotals(usageTotals([unknown, unknown]))).toBe("tokens n/a · cost n/a");
    expect(formatTotals(usageTotals([user]))).toBe("");
  });
});

import { describe, expect, it } from "vitest";
import type { UIMessage } from "../src/ui-message";
import { formatTotals, formatTurnUsage, turnUsage, usageTotals } from "../src/usage";

type Source = "reported" | "estimated" | null;
type Counts = { prompt_tokens: number; completion_tokens: number; total_tokens: number };

const turn = (id: string, usage: [number | null, number | null, Source] | "legacy", cost?: number, estimate?: Counts): UIMessage => {
  const stored =
    usage === "legacy"
      ? { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 }
      : {
          prompt_tokens: usage[0],
          completion_tokens: usage[1],
          total_tokens: usage[0] === null || usage[1] === null ? null : usage[0] + usage[1],
          source: usage[2],
          ...(estimate ? { estimated_tokens: estimate } : {}),
        };
  return { id, role: "assistant", parts: [], metadata: { model: "m", usage: stored, ...(cost === undefined ? {} : { cost_usd: cost }) } };
};
const user: UIMessage = { id: "u", role: "user", parts: [{ type: "text", text: "hi" }] };
const guess: Counts = { prompt_tokens: 10, completion_tokens: 3, total_tokens: 13 };

describe("turn usage", () => {
  it("reads the stored source: reported or unknown (with litellm's estimate apart); legacy counts as they are", () => {
    expect(turnUsage(turn("a", [20, 6, "reported"], 0.0001)?.metadata)).toEqual({ source: "reported", total: 26, prompt: 20, completion: 6, cost: 0.0001, estimated: null });
    expect(turnUsage(turn("b", [null, null, null], undefined, guess)?.metadata)).toEqual({ source: "unknown", total: null, prompt: null, completion: null, cost: null, estimated: 13 });
    expect(turnUsage(turn("c", [null, null, null])?.metadata)).toEqual({ source: "unknown", total: null, prompt: null, completion: null, cost: null, estimated: null });
    // stored when litellm's estimate took the counts' place: unknown, the counts an estimate, the cost dropped
    expect(turnUsage(turn("e", [10, 3, "estimated"], 0.00002)?.metadata)).toEqual({ source: "unknown", total: null, prompt: null, completion: null, cost: null, estimated: 13 });
    expect(turnUsage(turn("d", "legacy")?.metadata)?.source).toBe("reported");
    expect(turnUsage(user.metadata)).toBeNull();
    expect(turnUsage({ model: "m", usage: null })?.source).toBe("unknown");
  });

  it("words unreported usage as unknown, never 0 tokens or $0, the estimate only on hover", () => {
    expect(formatTurnUsage(turnUsage(turn("a", [20, 6, "reported"], 0.0001).metadata)!)).toEqual({
      tokens: "26 tokens",
      output: "6 output tokens",
      cost: "$0.000100",
      title: "this turn: 20 input + 6 output = 26 tokens (input counts the whole prompt of every step: system, history, tools), as reported by the provider",
    });
    expect(formatTurnUsage(turnUsage(turn("a", [20, 6, "reported"]).metadata)!).cost).toBe("cost n/a");
    expect(formatTurnUsage(turnUsage(turn("b", [null, null, null], undefined, guess).metadata)!)).toEqual({
      tokens: "usage unknown",
      output: "usage unknown",
      cost: "",
      title: "token usage unknown: the provider reported none (litellm's tokenizer estimates ≈13 tokens; not counted in the totals)",
    });
    const unknown = formatTurnUsage(turnUsage(turn("c", [null, null, null]).metadata)!);
    expect(unknown).toEqual({ tokens: "usage unknown", output: "usage unknown", cost: "", title: "token usage unknown: the provider reported none" });
    for (const text of [unknown, formatTurnUsage(turnUsage(turn("e", [10, 3, "estimated"], 0.00002).metadata)!)]) {
      expect(`${text.tokens} ${text.output} ${text.cost}`).not.toMatch(/\b0 tokens|\$0/);
    }
  });

  it("totals sum what the provider reported and count the unknown turns apart", () => {
    const reported = turn("a", [20, 6, "reported"], 0.5);
    const estimated = turn("b", [null, null, null], undefined, guess);
    const unknown = turn("c", [null, null, null]);
    expect(usageTotals([user, reported, estimated, unknown])).toEqual({ turns: 3, tokens: 26, unknown: 2, cost: 0.5, priced: 1 });
    expect(formatTotals(usageTotals([user, reported, estimated, unknown]))).toBe("26 tokens (+2 turns unknown) · $0.500000 (+2 turns n/a)");
    expect(formatTotals(usageTotals([reported, turn("d", [1, 1, "reported"])]))).toBe("28 tokens · $0.500000 (+1 turn n/a)");
    expect(formatTotals(usageTotals([reported]))).toBe("26 tokens · $0.500000");
    expect(formatTotals(usageTotals([unknown, estimated]))).toBe("usage unknown");
    expect(formatTotals(usageTotals([user]))).toBe("");
  });
});

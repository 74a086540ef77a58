/**
 * Token usage and cost of a turn, as the kernel stores them on its assistant message, and how the
 * panel words them (per-message footer and header totals).
 *
 * `metadata.usage` is `{prompt_tokens, completion_tokens, total_tokens: number | null,
 * source: "reported" | "estimated" | null}` (token counts); `metadata.cost_usd` (US dollars) is
 * present only when known. `source` says who counted: the provider ("reported"), litellm's
 * tokenizer because the provider sent nothing ("estimated", shown with "≈"), or nobody (null:
 * unknown, shown as "n/a", never 0). Messages stored before sources were recorded have no
 * `source`; their counts are shown as they are.
 */
import type { UIMessage } from "./ui-message";

export type UsageSource = "reported" | "estimated" | "unknown";

/** One turn's usage: token counts (null when unknown) and cost in US dollars (null when unknown). */
export interface TurnUsage {
  source: UsageSource;
  total: number | null;
  prompt: number | null;
  completion: number | null;
  cost: number | null;
}

const num = (x: unknown): number | null => (typeof x === "number" && Number.isFinite(x) ? x : null);

/** The usage recorded in a message's metadata, or null when it has none (a user message, a failed turn). */
export function turnUsage(metadata: Record<string, unknown> | undefined): TurnUsage | null {
  if (!metadata || !("usage" in metadata)) return null;
  const u = (metadata.usage ?? {}) as Record<string, unknown>;
  const total = num(u.total_tokens);
  const source: UsageSource = total === null || u.source === null ? "unknown" : u.source === "estimated" ? "estimated" : "reported";
  return {
    source,
    total: source === "unknown" ? null : total,
    prompt: num(u.prompt_tokens),
    completion: num(u.completion_tokens),
    cost: source === "unknown" ? null : num(metadata.cost_usd),
  };
}

const approx = (estimated: boolean): string => (estimated ? "≈" : "");
const dollars = (x: number): string => `$${x.toFixed(6)}`;

/** Footer text of one turn: `≈13 tokens · ≈$0.000010`, `26 tokens · cost n/a`, `tokens n/a · cost n/a`;
 * `output`: this reply's output tokens (`6 output tokens`), what the footer shows (the title has
 * the turn's input + output). */
export function formatTurnUsage(u: TurnUsage): { tokens: string; output: string; cost: string; title: string } {
  const est = u.source === "estimated";
  const tokens = u.total === null ? "tokens n/a" : `${approx(est)}${u.total} tokens`;
  const output = u.source === "unknown" ? "tokens n/a" : u.completion === null ? tokens : `${approx(est)}${u.completion} output tokens`;
  const cost = u.cost === null ? "cost n/a" : `${approx(est)}${dollars(u.cost)}`;
  const title =
    u.source === "unknown"
      ? "token usage unknown: the provider reported none and there was nothing to estimate"
      : `this turn: ${u.prompt ?? "n/a"} input + ${u.completion ?? "n/a"} output = ${u.total ?? "n/a"} tokens ` +
        "(input counts the whole prompt of every step: system, history, tools), " +
        (est ? "estimated by litellm (the provider reported no usage)" : "as reported by the provider");
  return { tokens, output, cost, title };
}

/** Totals over a transcript: `tokens` and `cost` sum the turns where they are known. */
export interface UsageTotals {
  /** Assistant messages with a usage record. */
  turns: number;
  tokens: number;
  /** Turns whose token counts are unknown (left out of `tokens`). */
  unknown: number;
  /** Turns whose counts are litellm's estimate. */
  estimated: number;
  /** Sum of the known costs (US dollars), or null when no turn has one. */
  cost: number | null;
  /** Turns with a known cost. */
  priced: number;
  /** Turns with a known cost computed from estimated counts. */
  pricedEstimated: number;
}

export function usageTotals(messages: readonly UIMessage[]): UsageTotals {
  const out: UsageTotals = { turns: 0, tokens: 0, unknown: 0, estimated: 0, cost: null, priced: 0, pricedEstimated: 0 };
  for (const m of messages) {
    const u = turnUsage(m.metadata);
    if (!u) continue;
    out.turns += 1;
    if (u.total === null) out.unknown += 1;
    else out.tokens += u.total;
    if (u.source === "estimated") out.estimated += 1;
    if (u.cost !== null) {
      out.cost = (out.cost ?? 0) + u.cost;
      out.priced += 1;
      if (u.source === "estimated") out.pricedEstimated += 1;
    }
  }
  return out;
}

/** Header text: `≈40 tokens (+1 turn n/a) · cost n/a`; "" without any turn. */
export function formatTotals(t: UsageTotals): string {
  if (!t.turns) return "";
  const missing = (n: number): string => (n ? ` (+${n} turn${n === 1 ? "" : "s"} n/a)` : "");
  const tokens = t.unknown === t.turns ? "tokens n/a" : `${approx(t.estimated > 0)}${t.tokens} tokens${missing(t.unknown)}`;
  const cost = t.cost === null ? "cost n/a" : `${approx(t.pricedEstimated > 0)}${dollars(t.cost)}${missing(t.turns - t.priced)}`;
  return `${tokens} · ${cost}`;
}

/**
 * Parity of the two chunk accumulators: the golden chunk fixtures through the panel's one.
 *
 * Each tests/fixtures/chunks/*.json is `{name, chunks, message}`: a UIMessageChunk stream and
 * the assistant UIMessage it must build, starting from the empty message
 * `{id: "msg-0", role: "assistant", parts: []}`. tests/test_accumulator_parity.py runs the same
 * files through the Python accumulator, so both sides are held to one expectation.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { type LiveTurn, applyChunks, newTurn } from "../src/accumulate";
import type { UIMessage, UIMessageChunk } from "../src/ui-message";

const DIR = join(__dirname, "..", "..", "tests", "fixtures", "chunks");
const INITIAL_ID = "msg-0";

interface ChunkFixture {
  name: string;
  chunks: UIMessageChunk[];
  message: UIMessage;
}

const fixtures: [string, ChunkFixture][] = readdirSync(DIR)
  .filter((f) => f.endsWith(".json"))
  .sort()
  .map((f) => [f.replace(/\.json$/, ""), JSON.parse(readFileSync(join(DIR, f), "utf8")) as ChunkFixture]);

function emptyTurn(): LiveTurn {
  return { ...newTurn("parity", false), message: { id: INITIAL_ID, role: "assistant", parts: [] } };
}

const deepFreeze = <T>(x: T): T => {
  if (x && typeof x === "object") {
    Object.values(x).forEach(deepFreeze);
    Object.freeze(x);
  }
  return x;
};

describe("golden chunk fixtures", () => {
  it("are at least twelve", () => {
    expect(fixtures.length).toBeGreaterThanOrEqual(12);
  });

  it.each(fixtures)("%s builds its expected message", (_name, fixture) => {
    const turn = applyChunks(emptyTurn(), fixture.chunks);
    expect(turn.message).toStrictEqual(fixture.message);
  });

  it.each(fixtures)("%s builds the same message one chunk per frame, without mutating anything", (_name, fixture) => {
    const chunks = deepFreeze(structuredClone(fixture.chunks));
    const turn = chunks.reduce((t, c) => deepFreeze(applyChunks(t, [c])), deepFreeze(emptyTurn()));
    expect(turn.message).toStrictEqual(fixture.message);
  });
});

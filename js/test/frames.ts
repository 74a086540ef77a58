/** The golden frames shared with the Python tests (tests/fixtures/frames/*.json). */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

export const FRAMES_DIR = join(__dirname, "..", "..", "tests", "fixtures", "frames");

export function loadFrames(malformed: boolean): [string, unknown][] {
  return readdirSync(FRAMES_DIR)
    .filter((f) => f.endsWith(".json") && f.startsWith("malformed-") === malformed)
    .sort()
    .map((f) => [f.replace(/\.json$/, ""), JSON.parse(readFileSync(join(FRAMES_DIR, f), "utf8"))]);
}

export function frame<T = unknown>(name: string): T {
  return JSON.parse(readFileSync(join(FRAMES_DIR, `${name}.json`), "utf8")) as T;
}

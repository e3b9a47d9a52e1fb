/**
 * One seed for the property tests of a run, so a failure in CI replays with
 * one command. Every `fc.assert` passes `propertyParams(...)`: the seed is
 * CF_PROPERTY_SEED when set, else a fresh one, and it is printed once per
 * test file together with the command that replays it:
 *
 *   CF_PROPERTY_SEED=<seed> npx vitest run <the failing file>
 *
 * With the same seed each `fc.assert` draws the same cases in the same order
 * (whatever the other tests of the file do), so the failure comes back with
 * its shrunk counterexample; fast-check's own message repeats the seed.
 */
import type { Parameters } from "fast-check";

function resolveSeed(): number {
  const given = process.env.CF_PROPERTY_SEED;
  if (given === undefined || given === "") return Math.floor(Math.random() * 2 ** 31);
  const seed = Number(given);
  if (!Number.isSafeInteger(seed)) throw new Error(`CF_PROPERTY_SEED=${given} is not an integer`);
  return seed;
}

/** The run's seed (one per test file: vitest gives each file its own module graph). */
export const PROPERTY_SEED = resolveSeed();

let printed = false;

/** fast-check parameters carrying the run's seed. */
export function propertyParams<T>(extra: Parameters<T> = {}): Parameters<T> {
  if (!printed) {
    printed = true;
    console.log(
      `property seed ${PROPERTY_SEED} (replay: CF_PROPERTY_SEED=${PROPERTY_SEED} npx vitest run <file>)`,
    );
  }
  return { ...extra, seed: PROPERTY_SEED };
}

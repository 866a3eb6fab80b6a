/**
 * Bounds every run store shares, so that a store's default does not depend
 * on importing another store. Edge-safe: no `node:` import.
 */

/** Default bound of a run store: how many runs it retains (`maxRuns`). */
export const DEFAULT_MAX_RUNS = 10_000

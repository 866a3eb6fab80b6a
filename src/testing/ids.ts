/**
 * The ids of a test runtime's runs and events, in sequence rather than
 * random, so a test gives the same ids every time it runs. A run's id keeps
 * the shape of a production one (a version 7 UUID of its creation time),
 * with its place in the sequence where the random bits would be.
 */
import type { NewRunId } from '../runtime/tasks/base/ids.ts'

export function sequentialIds(): { run: NewRunId; event: () => string } {
  let runs = 0
  let events = 0
  return {
    run: (now) => {
      const time = Math.max(0, Math.floor(now)).toString(16).padStart(12, '0')
      return `${time.slice(0, 8)}-${time.slice(8)}-7000-8000-${hex12(++runs)}`
    },
    event: () => `00000000-0000-4000-8000-${hex12(++events)}`,
  }
}

function hex12(n: number): string {
  return n.toString(16).padStart(12, '0')
}

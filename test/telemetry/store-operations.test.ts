// The table of RunStore's methods that svc.store.write.duration reads: keyed
// by the interface (a method left out does not compile), and naming only
// methods a store implements.
import { expect, it } from 'vitest'
import { MemoryRunStore } from '../../src/runtime/tasks/store/memory-store.ts'
import { STORE_OPERATIONS, STORE_WRITES } from '../../src/runtime/telemetry/store-operations.ts'

it('times every writing method, createRuns and pruneFinished included, and no read', () => {
  expect(STORE_WRITES).toContain('createRuns')
  expect(STORE_WRITES).toContain('pruneFinished')
  expect(STORE_WRITES).not.toContain('getRun')
  // The memory store implements every method the table names but those of a shared or SQL database.
  // Its schedule calls are fields it takes from its MemorySchedules, not methods of its class.
  const implemented = [...Object.getOwnPropertyNames(MemoryRunStore.prototype), ...Object.keys(new MemoryRunStore())]
  expect(Object.keys(STORE_OPERATIONS).filter((name) => !implemented.includes(name))).toEqual(['claimRunning', 'transactStep'])
})

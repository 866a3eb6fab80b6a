/** Replay from a step (replay-from-cases.ts) on Postgres; each case in a schema of its own. */
import { replayFromCases } from '../tasks/replay-from-cases.ts'
import { storePerCase } from './_pg.ts'

replayFromCases('Postgres', storePerCase('replay'))

/** Deadlines (deadline-cases.ts) on Postgres; each case in a schema of its own. */
import { deadlineCases } from '../tasks/deadline-cases.ts'
import { storePerCase } from './_pg.ts'

deadlineCases('Postgres', storePerCase('deadline'))

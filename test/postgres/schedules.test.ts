/** Runtime schedules (schedule-cases.ts) on Postgres; each case in a schema of its own. */
import { scheduleCases } from '../tasks/schedule-cases.ts'
import { storePerCase } from './_pg.ts'

scheduleCases('Postgres', storePerCase('schedules'))

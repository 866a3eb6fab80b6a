/** Compensation (compensation-cases.ts) on Postgres; each case in a schema of its own. */
import { compensationCases } from '../tasks/compensation-cases.ts'
import { storePerCase } from './_pg.ts'

compensationCases('Postgres', storePerCase('compensation'))

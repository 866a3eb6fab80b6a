/** Callback URLs (callback-cases.ts) on Postgres; each case in a schema of its own. */
import { callbackCases } from '../tasks/callback-cases.ts'
import { storePerCase } from './_pg.ts'

callbackCases('Postgres', storePerCase('callbacks'))

/** Tags and metadata (search-cases.ts) on Postgres; each case in a schema of its own. */
import { searchCases } from '../tasks/search-cases.ts'
import { storePerCase } from './_pg.ts'

searchCases('Postgres', storePerCase('search'))

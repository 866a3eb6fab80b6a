/** Compensation (compensation-cases.ts) on the memory store and on SQLite files, one process's and a shared one's. */
import { onLocalStores } from './_local-stores.ts'
import { compensationCases } from './compensation-cases.ts'

onLocalStores('compensation', compensationCases)

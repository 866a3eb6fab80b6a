/** Updates (update-cases.ts) on the memory store and on SQLite files, one process's and a shared one's. */
import { onLocalStores } from './_local-stores.ts'
import { updateCases } from './update-cases.ts'

onLocalStores('updates', updateCases)

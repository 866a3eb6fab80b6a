/** Tags and metadata (search-cases.ts) on the memory store and on SQLite files, one process's and a shared one's. */
import { onLocalStores } from './_local-stores.ts'
import { searchCases } from './search-cases.ts'

onLocalStores('search', searchCases)

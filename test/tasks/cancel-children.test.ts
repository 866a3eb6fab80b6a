/** Cancellation that reaches children (cancel-children-cases.ts) on the memory store and on SQLite files, one process's and a shared one's. */
import { onLocalStores } from './_local-stores.ts'
import { cancelChildrenCases } from './cancel-children-cases.ts'

onLocalStores('cancel-children', cancelChildrenCases)

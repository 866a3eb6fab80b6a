/** Replay from a step (replay-from-cases.ts) on the memory store and on SQLite files, one process's and a shared one's. */
import { onLocalStores } from './_local-stores.ts'
import { replayFromCases } from './replay-from-cases.ts'

onLocalStores('replay-from', replayFromCases)

/** Cancellation that reaches children (cancel-children-cases.ts) on Postgres, a store several processes share; each case in a schema of its own. */
import { cancelChildrenCases } from '../tasks/cancel-children-cases.ts'
import { storePerCase } from './_pg.ts'

cancelChildrenCases('Postgres', storePerCase('cancel'))

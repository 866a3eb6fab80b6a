/**
 * `svcjs/testing` on Postgres: the kit's cases (kit-contract.ts) on a
 * `PostgresRunStore`, a store several processes share, with the virtual
 * clock. Each case gets a schema of its own.
 */
import { kitContract } from '../testing/kit-contract.ts'
import { storePerCase } from './_pg.ts'

kitContract('Postgres', storePerCase('kit'))

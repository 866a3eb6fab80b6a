// A Postgres that refuses a run's writes for a while (a trigger that
// raises, as an operator's trigger or a failing extension would) costs the
// run nothing: a sleep whose timer could not be written still wakes once
// the write goes through, and a process that closes meanwhile leaves the
// run's lease to lapse, so that another process arms the wait.
import postgres from 'postgres'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { PostgresRunStore } from '../../src/postgres.ts'
import { createTaskRuntime } from '../../src/runtime/tasks/index.ts'
import type { RuntimeApiRoute, TaskContext, TaskRuntime } from '../../src/types.ts'
import { recordingLogger, type RecordingLogger, until } from '../tasks/_helpers.ts'
import { createDatabase } from './_pg.ts'

let url: string
let db: postgres.Sql
beforeAll(async () => {
  url = await createDatabase('write_faults')
  db = postgres(url, { onnotice: () => {} })
})
afterAll(() => db.end())

const opened: { runtime: TaskRuntime; store: PostgresRunStore }[] = []
afterEach(async () => {
  for (const { runtime, store } of opened.splice(0)) {
    await runtime.close()
    await store.close()
  }
})

let schemas = 0
async function engine(schema: string, routes: RuntimeApiRoute[], leaseMs = 60_000) {
  const store = new PostgresRunStore({ url, schema, pollMs: 50, leaseMs })
  const logger = recordingLogger()
  const runtime = createTaskRuntime({ routes, store, logger })
  opened.push({ runtime, store })
  await runtime.recover()
  return { runtime, store, logger }
}

/** Makes every insert of a timer in `schema` fail while `fault.on` is true. */
async function refuseTimers(schema: string): Promise<(on: boolean) => Promise<void>> {
  await db.unsafe(`
    CREATE TABLE ${schema}.fault (on_ boolean NOT NULL); INSERT INTO ${schema}.fault VALUES (true);
    CREATE FUNCTION ${schema}.refuse_timers() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF (SELECT on_ FROM ${schema}.fault) THEN RAISE EXCEPTION 'timers are refused'; END IF; RETURN NEW; END $$;
    CREATE TRIGGER refuse_timers BEFORE INSERT OR UPDATE ON ${schema}.timers FOR EACH ROW EXECUTE FUNCTION ${schema}.refuse_timers();`)
  return async (on) => {
    await db.unsafe(`UPDATE ${schema}.fault SET on_ = ${on}`)
  }
}

function napping(ran: string[]): RuntimeApiRoute[] {
  return [
    {
      path: '/api/nap',
      module: {
        kind: 'task',
        async POST(ctx: TaskContext) {
          await ctx.step.run('a', () => void ran.push('a'))
          await ctx.step.sleep('nap', 0.05)
          await ctx.step.run('b', () => void ran.push('b'))
          return 'awake'
        },
      },
    },
  ]
}

const wrote = (logger: RecordingLogger, what: string) => logger.text().includes(`could not record ${what}`)

describe('PostgresRunStore write faults do not strand runs', () => {
  it('a sleep whose timer write fails for 400 ms wakes once it goes through, its recorded step not run again', async () => {
    const schema = `w${++schemas}`
    const ran: string[] = []
    const a = await engine(schema, napping(ran))
    const refuse = await refuseTimers(schema)
    const { id } = await a.runtime.trigger('nap')
    await until(() => wrote(a.logger, 'the wait of step "nap"'))
    expect((await a.store.getRun(id))?.status).toBe('suspended')
    await new Promise((resolve) => setTimeout(resolve, 400))
    await refuse(false)
    await until(async () => (await a.store.getRun(id))?.status === 'completed', 10_000)
    expect(ran).toEqual(['a', 'b'])
  })

  it('a process that closes before it could arm the wait leaves the lease to lapse, and another process arms it', async () => {
    const schema = `w${++schemas}`
    const ran: string[] = []
    const a = await engine(schema, napping(ran), 300)
    const refuse = await refuseTimers(schema)
    const { id } = await a.runtime.trigger('nap')
    await until(() => wrote(a.logger, 'the wait of step "nap"'))
    await a.runtime.close()
    // Its lease stays on the run: nothing armed its wait yet.
    const [held] = await db.unsafe(`SELECT status, lease_owner FROM ${schema}.runs WHERE id = $1`, [id])
    expect(held).toMatchObject({ status: 'suspended' })
    expect(held.lease_owner).not.toBeNull()
    await refuse(false)
    const b = await engine(schema, napping(ran), 300)
    await until(async () => (await b.store.getRun(id))?.status === 'completed', 10_000)
    expect(ran).toEqual(['a', 'b'])
  })
})

/**
 * Run search (`listRuns` with `tags`, `metadata`, `from`, `to`), for
 * bench/store.ts (`npm run bench:store -- --only search`). On a SQLite
 * store (a temp file, WAL, `synchronous=FULL`) and a Postgres store (the
 * benchmark's embedded Postgres, fsync and synchronous_commit on), each
 * holding SEARCH_RUNS finished runs:
 * - the runs are created oldest first by `createRuns`, in batches (one
 *   transaction each), outside the time; their `createdAt` spread over 30
 *   days; each tagged with one of 20 tenants (`tenant:<n>`, `tenant:0` on
 *   0.1% of runs) and a plan (`plan:pro` on a fifth of them, else
 *   `plan:free`); about half with metadata `{ stage, n }`, `stage` one of
 *   5 values;
 * - on Postgres, `ANALYZE` of the runs and their tag rows once they are
 *   in, as autovacuum would do after such a load, so the planner knows the
 *   tables' sizes and how common each tag is;
 * - each query (SEARCH_QUERIES) is a dashboard page, `limit: 50`, timed
 *   as the median of SEARCH_CALLS calls after SEARCH_WARMUP warm-up
 *   calls, from the call to its answer.
 * Goal: every query under SEARCH_GOAL_MS on both stores. A query over it
 * prints its plan: EXPLAIN QUERY PLAN of the statement the SQLite store
 * runs, EXPLAIN (ANALYZE, BUFFERS) of the one the Postgres store runs.
 */
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import postgres from 'postgres'
import { PostgresRunStore } from '../src/postgres.ts'
import { wholeRecord } from '../src/postgres/records.ts'
import { searchConditions } from '../src/postgres/run-search.ts'
import { listRunsQuery } from '../src/runtime/tasks/sql/queries.ts'
import type { RunQuery, RunStore } from '../src/runtime/tasks/store/store.ts'
import { SqliteRunStore } from '../src/sqlite/store.ts'
import type { RunRecord, RunStatus } from '../src/runtime/types/runs.ts'
import { percentile } from './_store-measure.ts'

export const SEARCH_RUNS = 100_000
export const SEARCH_GOAL_MS = 100
const SEARCH_WARMUP = 2
const SEARCH_CALLS = 9
/** The dashboard's page. */
const PAGE = 50
/** Runs a `createRuns` call inserts, in one transaction. */
const FILL_BATCH = 5_000

const DAY_MS = 24 * 60 * 60 * 1000
const DAYS = 30
const START = Date.UTC(2025, 0, 1)
const TENANTS = 20
const TASKS = ['report', 'email', 'sync', 'billing', 'export']
const STAGES = ['queued', 'extract', 'transform', 'load', 'done']
/** The middle day of the 30, for the windows. */
const WINDOW = { from: new Date(START + 15 * DAY_MS).toISOString(), to: new Date(START + 16 * DAY_MS).toISOString() }
const OLDEST_DAY = { from: new Date(START).toISOString(), to: new Date(START + DAY_MS).toISOString() }
const ALL_DAYS = { from: new Date(START).toISOString(), to: new Date(START + DAYS * DAY_MS).toISOString() }

/** A PRNG with a fixed seed (mulberry32), so both stores hold the same runs. */
function random(seed: number): () => number {
  let a = seed
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** The SEARCH_RUNS runs, oldest first, as test/tasks/store-contract.ts's `makeRun` makes a record, finished. */
function makeRuns(): RunRecord[] {
  const next = random(42)
  const runs: RunRecord[] = []
  for (let i = 0; i < SEARCH_RUNS; i++) {
    const created = START + Math.floor((i * DAYS * DAY_MS) / SEARCH_RUNS)
    const tenant = next() < 0.001 ? 0 : 1 + Math.floor(next() * (TENANTS - 1))
    const roll = next()
    const status: RunStatus = roll < 0.9 ? 'completed' : roll < 0.98 ? 'failed' : 'cancelled'
    const run: RunRecord = {
      id: `run-${i}-${crypto.randomUUID()}`,
      taskName: TASKS[Math.floor(next() * TASKS.length)],
      status,
      trigger: 'manual',
      input: { n: i },
      ok: status === 'completed',
      attempts: [],
      steps: {},
      createdAt: new Date(created).toISOString(),
      startedAt: new Date(created + 5).toISOString(),
      finishedAt: new Date(created + 120).toISOString(),
      tags: [`tenant:${tenant}`, next() < 0.2 ? 'plan:pro' : 'plan:free'],
    }
    if (status === 'completed') run.result = { ok: true }
    if (next() < 0.5) run.metadata = { stage: STAGES[Math.floor(next() * STAGES.length)], n: i }
    runs.push(run)
  }
  return runs
}

/** Each query, or how to find it (the third page's cursor, read outside the time). */
const SEARCH_QUERIES: { label: string; query: (store: RunStore) => Promise<RunQuery> }[] = [
  { label: 'common tag (tenant:7, ~5%)', query: async () => ({ tags: ['tenant:7'] }) },
  { label: 'rare tag (tenant:0, 0.1%)', query: async () => ({ tags: ['tenant:0'] }) },
  { label: 'two tags (tenant:7 + plan:pro)', query: async () => ({ tags: ['tenant:7', 'plan:pro'] }) },
  { label: 'metadata stage=transform', query: async () => ({ metadata: { stage: 'transform' } }) },
  { label: 'metadata stage=transform + tenant:7', query: async () => ({ tags: ['tenant:7'], metadata: { stage: 'transform' } }) },
  { label: 'from/to: one day in the middle', query: async () => ({ ...WINDOW }) },
  { label: 'tenant:7 + the day', query: async () => ({ tags: ['tenant:7'], ...WINDOW }) },
  { label: 'task + status (report, failed)', query: async () => ({ taskName: 'report', status: 'failed' }) },
  {
    label: 'tenant:7, 3rd page by cursor',
    query: async (store) => {
      let cursor: string | undefined
      for (let page = 0; page < 2; page++) cursor = (await store.listRuns({ tags: ['tenant:7'], limit: PAGE, cursor })).at(-1)?.id
      return { tags: ['tenant:7'], cursor }
    },
  },
  // Beyond the dashboard's common pages: filters that few or none of the
  // newest runs match, and a window over every run.
  { label: 'a tag no run holds', query: async () => ({ tags: ['tenant:none'] }) },
  { label: 'a metadata value no run holds', query: async () => ({ metadata: { stage: 'none' } }) },
  { label: 'from/to: the oldest day', query: async () => ({ ...OLDEST_DAY }) },
  { label: 'from/to: all 30 days', query: async () => ({ ...ALL_DAYS }) },
]

export interface SearchFigure {
  label: string
  /** Median milliseconds of a call. */
  ms: number
  /** Runs the page held. */
  runs: number
  /** The plan, when over the goal. */
  plan?: string
}

export interface SearchFigures {
  fillMs: number
  queries: SearchFigure[]
}

async function fill(store: RunStore): Promise<number> {
  const runs = makeRuns()
  const t0 = performance.now()
  for (let from = 0; from < runs.length; from += FILL_BATCH) {
    const answers = await store.createRuns!(runs.slice(from, from + FILL_BATCH))
    if (answers.some((answer) => answer instanceof Error)) throw new Error('bench:store search: a run was not created')
  }
  return performance.now() - t0
}

async function measureQueries(store: RunStore, explain: (query: RunQuery) => Promise<string>): Promise<SearchFigure[]> {
  const figures: SearchFigure[] = []
  for (const { label, query: find } of SEARCH_QUERIES) {
    const query = { ...(await find(store)), limit: PAGE }
    let runs = 0
    const times: number[] = []
    for (let call = 0; call < SEARCH_WARMUP + SEARCH_CALLS; call++) {
      const t0 = performance.now()
      runs = (await store.listRuns(query)).length
      if (call >= SEARCH_WARMUP) times.push(performance.now() - t0)
    }
    const ms = percentile(times, 0.5)
    figures.push({ label, ms, runs, plan: ms >= SEARCH_GOAL_MS ? await explain(query) : undefined })
  }
  return figures
}

/** The figures on a SqliteRunStore file in `dir`. */
export async function measureSearchSqlite(dir: string): Promise<SearchFigures> {
  const path = join(dir, 'search.db')
  const store = new SqliteRunStore({ path, maxRuns: SEARCH_RUNS })
  try {
    const fillMs = await fill(store)
    const explain = async (query: RunQuery) => {
      const list = listRunsQuery(query)!
      const db = new DatabaseSync(path, { readOnly: true })
      try {
        const rows = db.prepare(`EXPLAIN QUERY PLAN ${list.text}`).all(...list.params) as { id: number; parent: number; detail: string }[]
        const depth = new Map<number, number>([[0, 0]])
        return rows
          .map((row) => {
            depth.set(row.id, (depth.get(row.parent) ?? 0) + 1)
            return `${'  '.repeat(depth.get(row.id)!)}${row.detail}`
          })
          .join('\n')
      } finally {
        db.close()
      }
    }
    return { fillMs, queries: await measureQueries(store, explain) }
  } finally {
    store.close()
  }
}

/** The figures on a PostgresRunStore on `url`, in a schema of its own. */
export async function measureSearchPostgres(url: string): Promise<SearchFigures> {
  const schema = 'svc_search'
  const store = new PostgresRunStore({ url, schema, maxRuns: SEARCH_RUNS })
  const sql = postgres(url, { prepare: false, onnotice: () => {}, max: 1 })
  try {
    await store.ready()
    const fillMs = await fill(store)
    await sql`ANALYZE ${sql(schema)}.runs, ${sql(schema)}.run_tag_sets`
    // The statement run-reads.ts's listRuns sends, for its plan.
    const explain = async (query: RunQuery) => {
      const statuses = query.status === undefined ? null : typeof query.status === 'string' ? [query.status] : [...query.status]
      const cursor = query.cursor ?? null
      const rows = await sql<{ 'QUERY PLAN': string }[]>`
        EXPLAIN (ANALYZE, BUFFERS) SELECT ${wholeRecord(sql, schema)} AS record FROM ${sql(schema)}.runs
        WHERE (${query.taskName ?? null}::text IS NULL OR task_name = ${query.taskName ?? null}::text)
          AND (${statuses}::text[] IS NULL OR status = ANY(${statuses}::text[])) ${searchConditions(sql, schema, query)}
          AND (${cursor}::text IS NULL OR seq < (SELECT seq FROM ${sql(schema)}.runs WHERE id = ${cursor}::text))
        ORDER BY seq DESC
        LIMIT ${query.limit ?? null}::bigint`
      return rows.map((row) => `  ${row['QUERY PLAN']}`).join('\n')
    }
    return { fillMs, queries: await measureQueries(store, explain) }
  } finally {
    await sql.end()
    await store.close()
  }
}

/** The table: each query's median on both stores, and whether it is under the goal. */
export function printSearch(sqlite: SearchFigures, pg: SearchFigures): void {
  const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`
  console.log(
    `\nRun search: ${SEARCH_RUNS.toLocaleString('en')} finished runs over ${DAYS} days, listRuns limit ${PAGE}, ` +
      `median of ${SEARCH_CALLS} calls after ${SEARCH_WARMUP} warm-up (filled by createRuns in ${seconds(sqlite.fillMs)} on SQLite, ` +
      `${seconds(pg.fillMs)} on Postgres)`,
  )
  const mark = (ms: number) => (ms < SEARCH_GOAL_MS ? 'ok' : 'MISSED')
  console.log(`${'query'.padEnd(40)} ${'SQLite'.padStart(10)}      ${'Postgres'.padStart(10)}      runs`)
  for (const [i, lite] of sqlite.queries.entries()) {
    const post = pg.queries[i]
    console.log(
      `${lite.label.padEnd(40)} ${`${lite.ms.toFixed(2)} ms`.padStart(10)} ${mark(lite.ms).padEnd(6)}` +
        `${`${post.ms.toFixed(2)} ms`.padStart(10)} ${mark(post.ms).padEnd(6)}${String(lite.runs).padStart(4)}${lite.runs === post.runs ? '' : ` (Postgres ${post.runs})`}`,
    )
  }
  console.log(`goal: every query under ${SEARCH_GOAL_MS} ms on both stores`)
  for (const [name, figures] of [
    ['SQLite', sqlite],
    ['Postgres', pg],
  ] as const) {
    for (const figure of figures.queries)
      if (figure.plan) console.log(`\n${name}, ${figure.label}, ${figure.ms.toFixed(2)} ms:\n${figure.plan}`)
  }
}

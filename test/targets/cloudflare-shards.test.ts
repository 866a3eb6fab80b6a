/**
 * Task runs spread over several `SvcTasks` Durable Objects (`shards` in
 * package.json), in real workerd: the worker built with 4 shards places
 * each run, keeps limits, keys and debounces whole across the objects
 * (for child runs too, which cross objects to their task's), fires each
 * cron tick once, lists every run once page after page, meets event waits
 * in every object, and loses nothing across a restart. An app
 * that had one object and is rebuilt with four still reaches its old runs;
 * one rebuilt with fewer shards fails loudly.
 */
import { runIdShard } from '../../src/runtime/tasks/base/ids.ts'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { taskPlacement, shardOf } from '../../src/cloudflare/shard-routing.ts'
import { buildWithShards, mostAtOnce, notifyServer, type ShardWorker, shardApp, shardWorker } from './_shards.ts'

const SHARDS = 4

describe('cloudflare with 4 shards: runs spread over four tasks objects', () => {
  let app: Awaited<ReturnType<typeof shardApp>>
  let out: string
  let persist: string
  let notify: Awaited<ReturnType<typeof notifyServer>>
  let worker: ShardWorker

  beforeAll(async () => {
    app = await shardApp(SHARDS)
    out = await buildWithShards(app.root, SHARDS)
    persist = await mkdtemp(join(tmpdir(), 'svc-shards-'))
    notify = await notifyServer()
    worker = await shardWorker(out, persist)
  })
  afterAll(async () => {
    await worker?.mf.dispose()
    await notify?.close()
    await app?.cleanup()
    if (persist) await rm(persist, { recursive: true, force: true })
  })

  it('writes the shard count into the worker and the object, and keeps the one binding and migration', async () => {
    const entry = await readFile(join(out, 'index.mjs'), 'utf8')
    expect(entry).toMatch(/shards:\s*4/)
    const wrangler = JSON.parse(await readFile(join(out, 'wrangler.json'), 'utf8'))
    expect(wrangler.durable_objects).toEqual({ bindings: [{ name: 'SVC_TASKS', class_name: 'SvcTasks' }] })
    expect(wrangler.migrations).toEqual([{ tag: 'v1', new_sqlite_classes: ['SvcTasks'] }])
  })

  it('spreads runs that name no key over more than one object, each held by exactly one, the one its id names', async () => {
    const ids: string[] = []
    for (let n = 0; n < 12; n++) ids.push((await worker.admin('/__tasks/jobs.plain', { body: { n } })).body.id)
    const holders = await Promise.all(ids.map((id) => worker.shardsHolding(id, SHARDS)))
    for (const [i, held] of holders.entries()) expect(held).toEqual([runIdShard(ids[i])])
    expect(new Set(holders.map(([shard]) => shard)).size).toBeGreaterThan(1)
    for (const [n, id] of ids.entries())
      expect(await worker.until(id, (run) => run.status === 'completed')).toMatchObject({ result: { n } })
  })

  it('starts one run for one idempotency key, whichever isolate asks and however often', async () => {
    const headers = { 'idempotency-key': 'order-7' }
    const answers = await Promise.all(Array.from({ length: 8 }, (_, n) => worker.admin('/__tasks/jobs.plain', { body: { n }, headers })))
    expect(new Set(answers.map((answer) => answer.body.id)).size).toBe(1)
    const { body } = await worker.admin('/__tasks/runs?task=jobs.plain&limit=100')
    expect(body.runs.filter((run: { id: string }) => run.id === answers[0].body.id)).toHaveLength(1)
  })

  it('gives a batch sent again with its Idempotency-Key the runs of the first send, item by item', async () => {
    for (const task of ['jobs.plain', 'jobs.digest']) {
      const body = Array.from({ length: 6 }, (_, n) => ({ n, user: `u${n}` }))
      const headers = { 'idempotency-key': `batch-${task}` }
      const first = await worker.admin(`/__tasks/${task}/batch`, { body, headers })
      const again = await worker.admin(`/__tasks/${task}/batch`, { body, headers })
      const ids = first.body.runs.map((item: { id: string }) => item.id)
      expect(first.body.runs.every((item: { ok: boolean }) => item.ok)).toBe(true)
      expect(new Set(ids).size).toBe(6)
      expect(again.body.runs.map((item: { id: string }) => item.id)).toEqual(ids)
    }
  })

  it('never runs more attempts of a task with concurrency 2 than 2 at once, over every object', async () => {
    const started = await Promise.all(
      Array.from({ length: 12 }, () => worker.admin('/__tasks/jobs.limited', { body: { notify: notify.url } })),
    )
    const ids = started.map((answer) => answer.body.id as string)
    for (const id of ids) await worker.until(id, (run) => run.status === 'completed')
    const hits = notify.hits.filter((hit) => ids.includes(hit.body.runId))
    expect(hits.filter((hit) => hit.what === 'limited-start')).toHaveLength(12)
    expect(mostAtOnce(hits, 'limited-start', 'limited-end')).toBe(2)
  })

  it('keeps a per-key limit of 1 for each user while the users spread over the objects', async () => {
    const users = ['ada', 'bob', 'cy', 'dee', 'eve', 'fay']
    const started = await Promise.all(
      users.flatMap((user) =>
        Array.from({ length: 4 }, () => worker.admin('/__tasks/jobs.per-user', { body: { notify: notify.url, user } })),
      ),
    )
    const ids = started.map((answer) => answer.body.id as string)
    for (const id of ids) await worker.until(id, (run) => run.status === 'completed')
    const hits = notify.hits.filter((hit) => ids.includes(hit.body.runId))
    expect(mostAtOnce(hits, 'user-start', 'user-end', (hit) => hit.body.user)).toBe(1)
    const holders = await Promise.all(ids.map((id) => worker.shardsHolding(id, SHARDS)))
    expect(new Set(holders.map(([shard]) => shard)).size).toBeGreaterThan(1)
  })

  /** The runs of `task` that these parents started, read whole (a listing's summaries name no parent). */
  async function childrenOf(parents: string[], task: string): Promise<{ id: string; parentRunId: string }[]> {
    const { body } = await worker.admin(`/__tasks/runs?task=${task}&limit=500`)
    const listed = body.runs.filter((run: { trigger: string }) => run.trigger === 'child')
    const runs = await Promise.all(listed.map(async (run: { id: string }) => (await worker.admin(`/__tasks/${run.id}`)).body))
    return runs.filter((run) => parents.includes(run.parentRunId))
  }

  it("starts the children of parents in every object in their task's object, whose concurrency of 2 holds for them all", async () => {
    const started = await Promise.all(
      Array.from({ length: 12 }, () => worker.admin('/__tasks/jobs.parent', { body: { notify: notify.url } })),
    )
    const parents = started.map((answer) => answer.body.id as string)
    for (const id of parents)
      expect((await worker.until(id, (run) => run.status === 'completed')).result).toEqual({ ok: true, result: 'done' })
    const parentShards = new Set(parents.map((id) => runIdShard(id)))
    expect(parentShards.size).toBeGreaterThan(1)
    const children = await childrenOf(parents, 'jobs.limited')
    expect(children).toHaveLength(12)
    const home = shardOf('flow\njobs.limited', SHARDS)
    for (const child of children) expect(await worker.shardsHolding(child.id, SHARDS)).toEqual([home])
    // Some parents lived elsewhere: their children crossed objects.
    expect([...parentShards].some((shard) => shard !== home)).toBe(true)
    const ids = children.map((child: { id: string }) => child.id)
    const hits = notify.hits.filter((hit) => ids.includes(hit.body.runId))
    expect(mostAtOnce(hits, 'limited-start', 'limited-end')).toBe(2)
  })

  it('merges debounced triggers for one key into one run with the latest input', async () => {
    const ids: string[] = []
    for (let n = 1; n <= 5; n++) ids.push((await worker.admin('/__tasks/jobs.digest', { body: { user: 'ada', n } })).body.id)
    const other = (await worker.admin('/__tasks/jobs.digest', { body: { user: 'bob', n: 1 } })).body.id
    expect(new Set(ids).size).toBe(1)
    expect(other).not.toBe(ids[0])
    expect((await worker.until(ids[0], (run) => run.status === 'completed')).result).toEqual({ user: 'ada', n: 5 })
    expect((await worker.until(other, (run) => run.status === 'completed')).result).toEqual({ user: 'bob', n: 1 })
  })

  it('fires each cron tick once, in one object, and skips a tick while the last is live', async () => {
    const before = (await worker.admin('/__tasks/runs?task=jobs.nightly&limit=100')).body.runs.length
    expect((await worker.scheduled('0 4 * * *')).outcome).toBe('ok')
    const { body } = await worker.admin('/__tasks/runs?task=jobs.nightly&limit=100')
    expect(body.runs).toHaveLength(before + 1)
    const [latest] = body.runs
    expect(latest).toMatchObject({ taskName: 'jobs.nightly', trigger: 'cron', status: 'completed' })
    expect(await worker.shardsHolding(latest.id, SHARDS)).toHaveLength(1)
    const { body: tasks } = await worker.admin('/__tasks')
    expect(tasks.tasks.find((task: { name: string }) => task.name === 'jobs.nightly').lastRun.id).toBe(latest.id)
    // Two ticks of two schedules at once: one run each.
    const [nightly, hourly] = await Promise.all([worker.scheduled('0 4 * * *'), worker.scheduled('0 * * * *')])
    expect([nightly.outcome, hourly.outcome]).toEqual(['ok', 'ok'])
    expect((await worker.admin('/__tasks/runs?task=jobs.nightly&limit=100')).body.runs).toHaveLength(before + 2)
    expect((await worker.admin('/__tasks/runs?task=jobs.hourly&limit=100')).body.runs).toHaveLength(1)
  })

  it('lists every run exactly once, newest first, page after page with the cursor of the page before', async () => {
    const batch = await worker.admin('/__tasks/jobs.plain/batch', { body: Array.from({ length: 30 }, (_, n) => ({ n })) })
    expect(batch.status).toBe(202)
    const { body: all } = await worker.admin('/__tasks/runs?limit=500')
    const ids: string[] = []
    let cursor: string | undefined
    for (let page = 0; page < 100; page++) {
      const query = `/__tasks/runs?limit=7${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`
      const { body } = await worker.admin(query)
      ids.push(...body.runs.map((run: { id: string }) => run.id))
      // Runs started while paging are newer than every page: they never show.
      await worker.admin('/__tasks/jobs.plain', { body: { n: -1 } })
      cursor = body.cursor
      if (!cursor) break
    }
    expect(new Set(ids).size).toBe(ids.length)
    expect(ids).toEqual(all.runs.map((run: { id: string }) => run.id))
    expect([...ids].sort().reverse()).toEqual(ids)
    const holders = await Promise.all(all.runs.slice(0, 30).map((run: { id: string }) => worker.shardsHolding(run.id, SHARDS)))
    expect(new Set(holders.map(([shard]) => shard)).size).toBe(SHARDS)
  })

  it('finds the runs of a tag in every object, and cancels them all with one bulk call, leaving the others', async () => {
    const sleep = (tags: string) => worker.admin('/__tasks/jobs.sleepy', { body: { seconds: 3600 }, headers: { 'svc-tags': tags } })
    const tagged: string[] = []
    for (let n = 0; n < 8; n++) tagged.push((await sleep('tenant:spread')).body.id)
    const other = (await sleep('tenant:else')).body.id
    for (const id of [...tagged, other]) await worker.until(id, (run) => run.status === 'suspended')
    const holders = await Promise.all(tagged.map((id) => worker.shardsHolding(id, SHARDS)))
    expect(new Set(holders.map(([shard]) => shard)).size).toBeGreaterThan(1)
    const { body: found } = await worker.admin('/__tasks/runs?tag=tenant:spread')
    expect(found.runs.map((run: { id: string }) => run.id)).toEqual([...tagged].sort().reverse())
    const dry = await worker.admin('/__tasks/runs/cancel', { body: { filter: { tag: 'tenant:spread' }, dryRun: true } })
    expect(dry.body).toMatchObject({ dryRun: true, matched: 8 })
    const done = await worker.admin('/__tasks/runs/cancel', { body: { filter: { tag: 'tenant:spread' } } })
    expect(done.body.runs.map((item: { outcome: string }) => item.outcome)).toEqual(Array(8).fill('cancelled'))
    for (const id of tagged) expect((await worker.run(id)).status).toBe('cancelled')
    expect((await worker.run(other)).status).toBe('suspended')
    await worker.admin(`/__tasks/runs/${other}/cancel`, { method: 'POST' })
  })

  it('keeps each runtime schedule in the object of its task, lists them all, and reaches each by its id', async () => {
    const made: { id: string; task: string }[] = []
    for (const task of ['jobs.plain', 'jobs.nightly', 'jobs.hourly', 'jobs.limited']) {
      const res = await worker.admin(`/__tasks/${task}/schedules`, {
        body: { cron: '0 5 * * *', input: { n: 7, notify: notify.url }, key: 'k' },
      })
      expect(res.status).toBe(201)
      made.push({ id: res.body.id, task })
    }
    const holders = await Promise.all(made.map(({ id }) => worker.shardsHolding(id, SHARDS, 'schedule')))
    expect(holders).toEqual(made.map(({ id }) => [runIdShard(id)]))
    expect(new Set(holders.map(([shard]) => shard)).size).toBeGreaterThan(1)
    const { body } = await worker.admin('/__tasks/schedules?key=k')
    expect(body.schedules.map((schedule: { id: string }) => schedule.id)).toEqual(made.map(({ id }) => id))
    for (const { id, task } of made) {
      expect((await worker.admin(`/__tasks/schedules/${id}/pause`, { method: 'POST' })).body).toMatchObject({ id, task, enabled: false })
      const tick = await worker.admin(`/__tasks/schedules/${id}/trigger`, { method: 'POST' })
      expect(tick.status).toBe(202)
      expect(await worker.until(tick.body.runId, (run) => run.status === 'completed')).toMatchObject({ taskName: task, schedule: { id } })
      expect((await worker.admin(`/__tasks/schedules/${id}`, { method: 'DELETE' })).body).toEqual({ id, deleted: true })
    }
    expect((await worker.admin(`/__tasks/schedules/${made[0].id}`)).status).toBe(404)
  })

  it('meets the event waits of every object with one event, and starts the event’s run once', async () => {
    const waiting: string[] = []
    for (let n = 0; n < 8; n++) waiting.push((await worker.admin('/__tasks/jobs.fulfil', { body: { orderId: 'o-9' } })).body.id)
    for (const id of waiting) await worker.until(id, (run) => run.status === 'suspended')
    const holders = await Promise.all(waiting.map((id) => worker.shardsHolding(id, SHARDS)))
    expect(new Set(holders.map(([shard]) => shard)).size).toBeGreaterThan(1)

    const sent = await worker.admin('/__events', { body: [{ name: 'order.paid', data: { orderId: 'o-9' }, id: 'evt-9' }] })
    expect(sent.status).toBe(202)
    const [event] = sent.body.events
    expect(event.runs).toEqual([expect.objectContaining({ taskName: 'jobs.receipt' })])
    expect([...event.resumed].sort()).toEqual([...waiting].sort())
    for (const id of waiting) expect((await worker.until(id, (run) => run.status === 'completed')).result).toEqual({ orderId: 'o-9' })
    // Sent again: the same event, nothing more started.
    const again = await worker.admin('/__events', { body: [{ name: 'order.paid', data: { orderId: 'o-9' }, id: 'evt-9' }] })
    expect(again.body.events[0].runs).toEqual([expect.objectContaining({ id: event.runs[0].id })])
    const receipts = (await worker.admin('/__tasks/runs?task=jobs.receipt&limit=100')).body.runs
    expect(receipts.filter((run: { id: string }) => run.id === event.runs[0].id)).toHaveLength(1)
    expect(receipts).toHaveLength(1)

    // A wait that begins after the event meets it through its lookback, in whichever object it is.
    const late = (await worker.admin('/__tasks/jobs.fulfil', { body: { orderId: 'o-9' } })).body.id
    expect((await worker.until(late, (run) => run.status === 'completed')).result).toEqual({ orderId: 'o-9' })

    const listed = await worker.admin('/__events?name=order.paid')
    expect(listed.body.events.filter((other: { id: string }) => other.id === 'evt-9')).toHaveLength(1)
    const [held] = listed.body.events
    expect(held.runs).toEqual([{ id: event.runs[0].id, taskName: 'jobs.receipt', status: 'completed' }])
    expect([...held.resumed].sort()).toEqual([...waiting, late].sort())
  })

  it('loses nothing across a restart: sleeping runs in every object complete, each recorded step ran once, and every run is still listed', async () => {
    const started = await worker.admin('/__tasks/jobs.sleepy/batch', {
      body: Array.from({ length: 8 }, () => ({ seconds: 1, notify: notify.url })),
    })
    const ids = started.body.runs.map((item: { id: string }) => item.id)
    for (const id of ids) await worker.until(id, (run) => run.status === 'suspended')
    const holders = await Promise.all(ids.map((id: string) => worker.shardsHolding(id, SHARDS)))
    expect(new Set(holders.map(([shard]) => shard)).size).toBeGreaterThan(1)
    const before = (await worker.admin('/__tasks/runs?limit=500')).body.runs.map((run: { id: string }) => run.id)
    await worker.mf.dispose()
    worker = await shardWorker(out, persist)
    // Nothing calls the objects: their alarms wake them, without the name a call gives.
    const woke = () => notify.hits.filter((hit) => hit.what === 'sleepy-after' && ids.includes(hit.body.runId)).length
    const deadline = Date.now() + 20_000
    while (woke() < ids.length && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
    expect(woke()).toBe(ids.length)
    for (const id of ids) expect((await worker.until(id, (run) => run.status === 'completed')).result).toBe('rested')
    const after = (await worker.admin('/__tasks/runs?limit=500')).body.runs.map((run: { id: string }) => run.id)
    expect(after).toEqual(before)
    // Recorded before the restart, replayed after it: each ran once.
    const ran = notify.hits.filter((hit) => hit.what === 'sleepy-before').map((hit) => hit.body.runId)
    expect([...ran].sort()).toEqual([...ids].sort())
  })

  it('loses no child across a restart: children asleep in their task’s object wake, and their parents in other objects resume once', async () => {
    // Children of two tasks in two objects, each object holding parents of the other's children: on
    // waking together, each object recovers its parents without waiting for the other.
    const tasks = ['jobs.resting', 'jobs.dozing']
    const homes = tasks.map((task) => shardOf(`flow\n${task}`, SHARDS))
    expect(homes[0]).not.toBe(homes[1])
    // In runs of four, one after another, so each task's parents go round every object.
    const started = []
    for (let i = 0; i < 16; i++) {
      started.push(
        await worker.admin('/__tasks/jobs.parent', { body: { notify: notify.url, sleep: 1, task: tasks[Math.floor(i / 4) % 2] } }),
      )
    }
    const parents = started.map((answer) => answer.body.id as string)
    for (const id of parents) await worker.until(id, (run) => run.status === 'suspended')
    // Parents of each task's children in the other task's object.
    for (const i of [0, 1]) expect(parents.some((id, n) => Math.floor(n / 4) % 2 === i && runIdShard(id) === homes[1 - i])).toBe(true)
    await worker.mf.dispose()
    worker = await shardWorker(out, persist)
    // Nothing calls the objects: the children's alarms wake their object, which tells the parents' objects.
    const resumed = () =>
      notify.hits.filter((hit) => hit.what === 'parent-after' && parents.includes(hit.body.runId)).map((hit) => hit.body.runId)
    const deadline = Date.now() + 20_000
    while (resumed().length < parents.length && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
    expect([...resumed()].sort()).toEqual([...parents].sort())
    for (const id of parents)
      expect((await worker.until(id, (run) => run.status === 'completed')).result).toEqual({ ok: true, result: 'woke' })
    const children = [...(await childrenOf(parents, 'jobs.resting')), ...(await childrenOf(parents, 'jobs.dozing'))]
    expect(children).toHaveLength(16)
    // Each child's step recorded before the restart ran once.
    const ids = children.map((child) => child.id)
    const ran = notify.hits.filter((hit) => hit.what === 'child-before' && ids.includes(hit.body.runId)).map((hit) => hit.body.runId)
    expect([...ran].sort()).toEqual([...ids].sort())
  })
})

describe('placing runs on shards', () => {
  it('places a task by its flow key only when every limit it sets reads that key, else by its name', () => {
    expect(taskPlacement({})).toEqual({ by: 'any' })
    expect(taskPlacement({ concurrency: { limit: 2 } })).toEqual({ by: 'task' })
    expect(taskPlacement({ concurrency: { limit: 1, key: 'input.user' }, debounce: { seconds: 1, key: 'input.user' } })).toEqual({
      by: 'key',
      path: 'input.user',
    })
    expect(
      taskPlacement({ concurrency: { limit: 1, key: 'input.user' }, rateLimit: { limit: 5, periodSeconds: 60, key: 'input.org' } }),
    ).toEqual({ by: 'task' })
    expect(taskPlacement({ concurrency: { limit: 1, key: 'input.user' }, rateLimit: { limit: 5, periodSeconds: 60 } })).toEqual({
      by: 'task',
    })
  })

  it('hashes the same text to the same shard, every shard in reach, and to shard 0 with one', () => {
    const seen = new Set(Array.from({ length: 200 }, (_, i) => shardOf(`key\njobs.plain\n${i}`, 4)))
    expect([...seen].sort()).toEqual([0, 1, 2, 3])
    expect(shardOf('flow\njobs.limited', 4)).toBe(shardOf('flow\njobs.limited', 4))
    expect(shardOf('anything', 1)).toBe(0)
  })
})

describe('cloudflare shards in the build', () => {
  it('refuses a shard count that is not a whole number from 1 to 64, naming the field', async () => {
    const app = await shardApp(1)
    try {
      for (const shards of [0, 65, 2.5]) {
        await expect(buildWithShards(app.root, shards)).rejects.toThrow(
          `package.json: svc.cloudflare.shards must be a whole number from 1 to 64 (got ${shards})`,
        )
      }
    } finally {
      await app.cleanup()
    }
  })
})

describe('cloudflare shards across deploys', () => {
  let app: Awaited<ReturnType<typeof shardApp>>
  let persist: string
  let worker: ShardWorker | undefined

  beforeAll(async () => {
    app = await shardApp(1)
    persist = await mkdtemp(join(tmpdir(), 'svc-shards-up-'))
  })
  afterAll(async () => {
    await worker?.mf.dispose()
    await app?.cleanup()
    if (persist) await rm(persist, { recursive: true, force: true })
  })

  it('an app built with one object, rebuilt with 4 on the same storage, still reaches its old runs, keys and tokens', async () => {
    worker = await shardWorker(await buildWithShards(app.root, 1), persist)
    const asleep = (await worker.admin('/__tasks/jobs.sleepy', { body: { seconds: 2 } })).body.id
    const done = (await worker.admin('/__tasks/jobs.plain', { body: { n: 1 }, headers: { 'idempotency-key': 'before' } })).body.id
    const waiting = (await worker.admin('/__tasks/jobs.approval', { body: {} })).body.id
    const suspended = await worker.until(waiting, (run) => run.status === 'suspended')
    await worker.until(done, (run) => run.status === 'completed')
    const wakesAt = Date.parse((await worker.until(asleep, (run) => run.status === 'suspended')).suspended.waitpoint.until)
    await worker.mf.dispose()

    worker = await shardWorker(await buildWithShards(app.root, SHARDS), persist)
    // Nothing calls the objects until well after the sleep ends: the lone
    // object, now shard 0 of 4, is woken by its alarm alone, without its name.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, wakesAt + 3000 - Date.now())))
    const called = Date.now()
    const rested = await worker.until(asleep, (run) => run.status === 'completed')
    expect(Date.parse(rested.finishedAt)).toBeLessThan(called)
    expect(await worker.run(done)).toMatchObject({ id: done, status: 'completed', result: { n: 1 } })
    const listed = (await worker.admin('/__tasks/runs?limit=100')).body.runs.map((run: { id: string }) => run.id)
    expect(listed).toEqual(expect.arrayContaining([done, waiting]))
    const token = suspended.suspended.waitpoint.tokenId
    expect(await worker.admin(`/__tasks/tokens/${encodeURIComponent(token)}`, { body: { by: 'ops' } })).toEqual({
      status: 200,
      body: { ok: true, status: 'completed' },
    })
    expect((await worker.until(waiting, (run) => run.status === 'completed')).result).toEqual({ approved: { by: 'ops' } })
    const replayed = await worker.admin(`/__tasks/runs/${done}/replay`, { method: 'POST' })
    expect((await worker.until(replayed.body.id, (run) => run.status === 'completed')).replayOf).toBe(done)
    await worker.mf.dispose()
    worker = undefined
  })

  it('refuses to serve with fewer shards than the objects have seen, saying what to set', async () => {
    worker = await shardWorker(await buildWithShards(app.root, 2), persist)
    const listed = await worker.admin('/__tasks/runs')
    expect(listed.status).toBe(500)
    expect(listed.body).toMatchObject({ code: 'SHARDS_REDUCED', error: expect.stringMatching(/Set shards back to 4/) })
  })
})

// The runs dashboard in a real browser, against `svc dev` on test/fixtures/dashboard-app.
import { beforeAll, describe, expect, it } from 'vitest'
import { dashboardPerTest, trigger } from './_browser.ts'

const ui = dashboardPerTest(async (opened) => {
  // Marks this document: a reload would drop it.
  await opened.evaluate(() => ((window as { loadedOnce?: boolean }).loadedOnce = true))
})

const runPanel = () => ui.page.locator('#run')
const runId = async () => (await runPanel().locator('.run-id').textContent())!
const stillSameDocument = () => ui.page.evaluate(() => (window as { loadedOnce?: boolean }).loadedOnce === true)

async function triggerFromPage(task: string, input: string): Promise<void> {
  await ui.page.getByLabel('Task', { exact: true }).first().selectOption(task)
  await ui.page.getByLabel('Input (JSON)').fill(input)
  await ui.page.getByRole('button', { name: 'Trigger' }).click()
}

describe('the runs dashboard under svc dev', () => {
  it('lists the tasks in a table with header cells, what starts each, and a schedule with its next fire time', async () => {
    const tasks = ui.page.getByRole('region', { name: 'Tasks' }).getByRole('table')
    await expect
      .poll(() => tasks.getByRole('columnheader').allTextContents())
      .toEqual(['Task', 'Runs on', 'Next run', 'Retries', 'Timeout', 'Last run'])
    await expect.poll(() => tasks.getByRole('row').filter({ hasText: 'jobs.greet' }).textContent()).toContain('event greeting.requested')
    await expect.poll(() => tasks.getByRole('row').filter({ hasText: 'jobs.flaky' }).textContent()).toContain('on demand')
    await expect
      .poll(() => tasks.getByRole('rowheader').allTextContents())
      .toEqual(['jobs.approve', 'jobs.flaky', 'jobs.greet', 'jobs.nap', 'jobs.nightly', 'jobs.parent', 'jobs.ship'])
    const nightly = tasks.getByRole('row').filter({ hasText: 'jobs.nightly' })
    await expect.poll(() => nightly.textContent()).toContain('30 3 * * *')
    const next = new Date((await nightly.locator('time').getAttribute('datetime'))!)
    expect([next.getUTCHours(), next.getUTCMinutes()]).toEqual([3, 30])
  })

  it('triggers a task with input; the run appears and completes without a reload', async () => {
    await triggerFromPage('jobs.greet', '{ "name": "Ada" }')
    await expect.poll(() => runPanel().locator('.status').first().textContent()).toBe('completed')
    const id = await runId()
    expect(id).toMatch(/^[0-9a-f-]{36}$/)
    await expect.poll(() => runPanel().textContent()).toContain('"Hello, Ada"')
    const row = ui.page.getByRole('region', { name: 'Runs' }).getByRole('row').filter({ hasText: id })
    await expect.poll(() => row.locator('.status').textContent()).toBe('completed')
    expect(await stillSameDocument()).toBe(true)
  })

  it('shows runs started elsewhere as they change, from the event stream', async () => {
    await expect.poll(() => ui.page.locator('#live').textContent()).toBe('live')
    const id = await trigger(ui.dev.url, 'jobs.approve', { from: 'elsewhere' })
    const row = ui.page.getByRole('region', { name: 'Runs' }).getByRole('row').filter({ hasText: id })
    await expect.poll(() => row.locator('.status').textContent()).toBe('suspended')
    const done = await fetch(`${ui.dev.url}/__tasks/tokens/${id}:approval`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"approved":false}',
    })
    expect(done.status).toBe(200)
    await expect.poll(() => row.locator('.status').textContent()).toBe('completed')
    expect(await stillSameDocument()).toBe(true)
  })

  it('shows a validation error with its details', async () => {
    await triggerFromPage('jobs.greet', '{ "name": "" }')
    const alert = ui.page.getByRole('region', { name: 'Trigger a run' }).getByRole('alert')
    await expect.poll(() => alert.textContent()).toContain('VALIDATION_FAILED')
    await expect.poll(() => alert.locator('li').allTextContents()).toEqual(['input.name: Invalid length: Expected >=1 but received 0'])
    expect(await runPanel().isHidden()).toBe(true)
  })

  it('says when the input is not JSON, before sending it', async () => {
    await triggerFromPage('jobs.greet', '{ name: Ada }')
    const alert = ui.page.getByRole('region', { name: 'Trigger a run' }).getByRole('alert')
    await expect.poll(() => alert.textContent()).toContain('The input is not JSON')
  })

  it("shows a run's input, result, attempts and steps as collapsible JSON", async () => {
    await triggerFromPage('jobs.greet', '{ "name": "Grace" }')
    await expect.poll(() => runPanel().locator('.status').first().textContent()).toBe('completed')
    const attempts = runPanel().getByRole('table')
    await expect.poll(() => attempts.getByRole('columnheader').allTextContents()).toEqual(['#', 'Started', 'Duration', 'Timeline', 'Error'])
    expect(await attempts.getByRole('row').count()).toBe(2)
    const step = runPanel().locator('details.step').filter({ hasText: 'compose' })
    expect(await step.locator('> summary').textContent()).toBe('compose completed')
    expect(await step.getAttribute('open')).toBeNull()
    await step.locator('> summary').click()
    expect(await step.getAttribute('open')).toBe('')
    expect(await step.locator('.key').allTextContents()).toEqual(['text: '])
    expect(await step.locator('.j-string').textContent()).toBe('"Hello, Grace"')
  })

  it('cancels a parent with the child run it waits on, and links the child', async () => {
    await triggerFromPage('jobs.parent', '{}')
    await expect.poll(() => runPanel().textContent()).toContain('Waiting for run')
    const parent = await runId()
    const child = (await runPanel().locator('a[href^="#run/"]').first().textContent())!
    await runPanel().getByRole('button', { name: 'Cancel' }).click()
    await expect.poll(() => runPanel().locator('.status').first().textContent()).toBe('cancelled')
    const note = runPanel().locator('.cancelled-with')
    await expect.poll(() => note.textContent()).toBe(`Cancelled with it: ${child}`)
    const childRecord = await (await fetch(`${ui.dev.url}/__tasks/${child}`)).json()
    expect(childRecord.status).toBe('cancelled')
    await note.getByRole('link').click()
    await expect.poll(runId).toBe(child)
    // Another run shown: the note was the parent's.
    expect(await note.textContent()).toBe('')
    expect(parent).not.toBe(child)
  })

  it('cancels a sleeping run; its recorded steps stay readable', async () => {
    await triggerFromPage('jobs.nap', '{}')
    await expect.poll(() => runPanel().textContent()).toContain('Sleeping until')
    await runPanel().getByRole('button', { name: 'Cancel' }).click()
    await expect.poll(() => runPanel().locator('.status').first().textContent()).toBe('cancelled')
    expect(await runPanel().getByRole('button', { name: 'Cancel' }).count()).toBe(0)
    expect(await runPanel().locator('details.step summary').allTextContents()).toContain('before completed')
    const run = await (await fetch(`${ui.dev.url}/__tasks/${await runId()}`)).json()
    expect(run.status).toBe('cancelled')
  })

  it('completes a token with a JSON payload and shows the run finish', async () => {
    await triggerFromPage('jobs.approve', '{}')
    const id = await expect
      .poll(() => runPanel().locator('.token-id').textContent())
      .toMatch(/:approval$/)
      .then(runId)
    expect(await runPanel().locator('.token-id').textContent()).toBe(`${id}:approval`)
    // The first attempt ran up to the wait: it is suspended, not missing.
    expect(await runPanel().locator('.attempt-live').textContent()).toBe(
      'Attempt 1 is suspended until what the run waits on is met; it is listed here once it ends.',
    )
    await ui.page.getByLabel('Payload (JSON)').fill('{ "approved": true }')
    await ui.page.getByRole('button', { name: 'Complete token' }).click()
    await expect.poll(() => runPanel().locator('.status').first().textContent()).toBe('completed')
    expect(await runPanel().textContent()).toContain('approved: true')
    expect(await runPanel().locator('table.attempts tbody tr').count()).toBe(1)
    expect(await runPanel().locator('.attempt-live').count()).toBe(0)
  })

  it('links a run waiting on a child run to that run, and the child back to its parent', async () => {
    await triggerFromPage('jobs.parent', '{}')
    await expect.poll(() => runPanel().textContent()).toContain('Waiting for run')
    const parent = await runId()
    await runPanel().getByRole('paragraph').filter({ hasText: 'Waiting for run' }).getByRole('link').click()
    await expect.poll(runId).not.toBe(parent)
    expect(await runPanel().locator('dd code').first().textContent()).toBe('jobs.nap')
    await runPanel().getByRole('link', { name: parent }).click()
    await expect.poll(runId).toBe(parent)
  })

  it('replays a failed run as a new run of the same input that links back to it', async () => {
    await triggerFromPage('jobs.flaky', '{ "order": 7 }')
    await expect.poll(() => runPanel().locator('.status').first().textContent()).toBe('failed')
    const failed = await runId()
    expect(await runPanel().locator('pre.error').textContent()).toBe('order 7 could not be charged')
    await runPanel().getByRole('button', { name: 'Replay', exact: true }).click()
    await expect.poll(runId).not.toBe(failed)
    await expect.poll(() => runPanel().locator('.status').first().textContent()).toBe('completed')
    expect(await runPanel().getByRole('link', { name: failed }).count()).toBe(1)
    expect(await runPanel().textContent()).toContain('replay')
    expect(await runPanel().textContent()).toContain('charged: 7')
  })

  it('replays a failed run from the step that threw, or from a recorded step, keeping the steps before it', async () => {
    await triggerFromPage('jobs.ship', '{ "order": 3 }')
    await expect.poll(() => runPanel().locator('.status').first().textContent()).toBe('failed')
    const failed = await runId()
    // maxDuration gives each run a deadline, shown with the run's facts.
    await expect.poll(() => runPanel().locator('dl.facts').textContent()).toContain('Deadline')
    const thrown = runPanel().locator('p.failed-step')
    expect(await thrown.textContent()).toContain('Thrown by step label')
    const packed = (await (await fetch(`${ui.dev.url}/__tasks/${failed}`)).json()).steps.pack
    await thrown.getByRole('button', { name: 'Replay from here' }).click()
    await expect.poll(runId).not.toBe(failed)
    await expect.poll(() => runPanel().locator('.status').first().textContent()).toBe('completed')
    const replayed = await (await fetch(`${ui.dev.url}/__tasks/${await runId()}`)).json()
    // pack was kept as recorded, not run again.
    expect(replayed).toMatchObject({ replayOf: failed, result: { label: 'label for box-3' } })
    expect(replayed.steps.pack).toEqual(packed)
    // Each recorded step offers it too: from pack, both steps run anew.
    const steps = runPanel().locator('ul.steps > li')
    expect(await steps.count()).toBe(2)
    await steps.filter({ hasText: 'pack' }).getByRole('button', { name: 'Replay from here' }).click()
    await expect.poll(async () => (await runId()) !== replayed.id).toBe(true)
    await expect.poll(() => runPanel().locator('.status').first().textContent()).toBe('completed')
    const again = await (await fetch(`${ui.dev.url}/__tasks/${await runId()}`)).json()
    expect(again.replayOf).toBe(replayed.id)
    expect(again.steps.pack.startedAt).not.toBe(packed.startedAt)
  })

  it('filters runs by task and by status', async () => {
    await trigger(ui.dev.url, 'jobs.greet', { name: 'filter' })
    await trigger(ui.dev.url, 'jobs.nap', {})
    const runs = ui.page.getByRole('region', { name: 'Runs' })
    await runs.getByLabel('Task').selectOption('jobs.nap')
    await expect.poll(async () => new Set(await runs.locator('tbody td:nth-child(2)').allTextContents())).toEqual(new Set(['jobs.nap']))
    await runs.getByLabel('Task').selectOption('')
    await runs.getByRole('group', { name: 'Status' }).getByLabel('completed').check()
    await expect.poll(async () => new Set(await runs.locator('tbody .status').allTextContents())).toEqual(new Set(['completed']))
  })

  it('filters by several statuses at once: runs of each checked status, none of the others', async () => {
    await trigger(ui.dev.url, 'jobs.greet', { name: 'several' })
    await trigger(ui.dev.url, 'jobs.nap', {})
    const cancelled = await trigger(ui.dev.url, 'jobs.nap', {})
    expect((await fetch(`${ui.dev.url}/__tasks/runs/${cancelled}/cancel`, { method: 'POST' })).status).toBe(200)
    const runs = ui.page.getByRole('region', { name: 'Runs' })
    const statuses = runs.getByRole('group', { name: 'Status' })
    // Checked from the keyboard, as a checkbox is.
    await statuses.getByLabel('suspended').focus()
    await ui.page.keyboard.press('Space')
    await statuses.getByLabel('cancelled').check()
    await expect
      .poll(async () => new Set(await runs.locator('tbody .status').allTextContents()))
      .toEqual(new Set(['suspended', 'cancelled']))
    expect(await runs.locator('tbody tr').filter({ hasText: cancelled }).count()).toBe(1)
    await statuses.getByLabel('suspended').uncheck()
    await expect.poll(async () => new Set(await runs.locator('tbody .status').allTextContents())).toEqual(new Set(['cancelled']))
  })

  describe('with more runs than one page holds', () => {
    // Started one after another, so that the first is the oldest run of the task.
    const started: string[] = []
    beforeAll(async () => {
      for (let i = 0; i < 130; i++) started.push(await trigger(ui.dev.url, 'jobs.greet', { name: `run ${i}` }))
    }, 60_000)

    const runs = () => ui.page.getByRole('region', { name: 'Runs' })
    const loadMore = () => runs().getByRole('button', { name: 'Load more' })
    const shownIds = () =>
      runs()
        .locator('tbody tr')
        .evaluateAll((rows) => rows.map((row) => row.getAttribute('data-run')))

    it('shows the newest 100, and Load more appends older pages until the last, each run once', async () => {
      await expect.poll(() => runs().locator('tbody tr').count()).toBe(100)
      while ((await loadMore().count()) > 0) {
        const before = (await shownIds()).length
        // From the keyboard: the last page hides the button and moves focus to the first run it added.
        await loadMore().press('Enter')
        await expect.poll(async () => (await shownIds()).length).toBeGreaterThan(before)
      }
      const ids = await shownIds()
      const lastPage = Math.floor((ids.length - 1) / 100) * 100
      expect(await ui.page.evaluate(() => document.activeElement?.closest('tr')?.getAttribute('data-run'))).toBe(ids[lastPage])
      const all = (await (await fetch(`${ui.dev.url}/__tasks/runs?limit=500`)).json()) as { runs: { id: string }[]; cursor?: string }
      expect(all.cursor).toBeUndefined()
      expect(ids).toEqual(all.runs.map((run) => run.id))
      expect(new Set(ids).size).toBe(ids.length)
      expect(ids).toContain(started[0])
      expect(await loadMore().count()).toBe(0)
    })

    it('keeps the pages loaded when the event stream refreshes the list, with new runs on top', async () => {
      await expect.poll(() => ui.page.locator('#live').textContent()).toBe('live')
      await expect.poll(() => runs().locator('tbody tr').count()).toBe(100)
      await loadMore().click()
      await expect.poll(async () => (await shownIds()).length).toBeGreaterThan(100)
      const shown = (await shownIds()).length
      const fresh = await trigger(ui.dev.url, 'jobs.greet', { name: 'fresh' })
      await expect.poll(async () => (await shownIds())[0]).toBe(fresh)
      const ids = await shownIds()
      expect(ids.length).toBe(shown)
      expect(new Set(ids).size).toBe(ids.length)
    })

    it('starts again from the first page when a filter changes', async () => {
      await expect.poll(() => runs().locator('tbody tr').count()).toBe(100)
      await loadMore().click()
      await expect.poll(async () => (await shownIds()).length).toBeGreaterThan(100)
      await runs().getByLabel('Task').selectOption('jobs.greet')
      await expect.poll(async () => (await shownIds()).length).toBe(100)
      expect(new Set(await runs().locator('tbody td:nth-child(2)').allTextContents())).toEqual(new Set(['jobs.greet']))
      expect(await loadMore().count()).toBe(1)
      await runs().getByRole('group', { name: 'Status' }).getByLabel('failed', { exact: true }).check()
      await expect.poll(() => runs().textContent()).toContain('No runs match.')
      expect(await loadMore().count()).toBe(0)
    })
  })
})

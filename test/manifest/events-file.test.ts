/**
 * The app's event schemas file, `src/events.ts`: the scan reads the names
 * its `events` object declares, as written, and reports what it cannot
 * read at `file:line:col`.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { scanApp } from '../../src/manifest.ts'
import { renderTaskTypes } from '../../src/manifest/task-types.ts'
import { at } from './_helpers.ts'

const scratch = mkdtempSync(join(tmpdir(), 'svc-events-file-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

let apps = 0
/** Scans an app of `files` (path → text), without the scan cache. */
async function scan(files: Record<string, string>) {
  const root = join(scratch, `app-${apps++}`)
  for (const [file, text] of Object.entries({ 'src/api/hello.ts': 'export const GET = () => new Response("hi")\n', ...files })) {
    mkdirSync(join(root, file, '..'), { recursive: true })
    writeFileSync(join(root, file), text)
  }
  const result = await scanApp({ root, cache: false })
  return { ...result, errors: result.errors.map(String) }
}

describe('src/events.ts', () => {
  it('is read for its names, quoted or not, with as const or satisfies around the object', async () => {
    const source =
      "import * as v from 'valibot'\nexport const events = {\n  'order.paid': v.object({}),\n  shipped: v.object({}),\n  \"stripe/invoice.paid\": v.any(),\n} as const\n"
    const result = await scan({ 'src/events.ts': source })
    expect(result.errors).toEqual([])
    expect(result.events).toEqual({ file: 'src/events.ts', names: ['order.paid', 'shipped', 'stripe/invoice.paid'] })
  })

  it('is optional, and may be a .js file', async () => {
    expect((await scan({})).events).toBeUndefined()
    const js = await scan({ 'src/events.js': 'export const events = { a: null }\n' })
    expect(js.events).toEqual({ file: 'src/events.js', names: ['a'] })
  })

  it('reports computed and spread keys, bad and repeated names at their place', async () => {
    const source =
      "const more = {}\nconst key = 'x'\nexport const events = {\n  [key]: s,\n  ...more,\n  'no spaces': s,\n  ok: s,\n  'ok': s,\n}\n"
    const { errors, events } = await scan({ 'src/events.ts': source })
    expect(events).toBeUndefined()
    expect(errors).toEqual([
      `src/events.ts:${at(source, '[key]')}: every key of events must be an event name written as it is, not computed or spread: write export const events = { 'order.paid': v.object({ … }) }, one key per event name`,
      `src/events.ts:${at(source, '...more')}: every key of events must be an event name written as it is, not computed or spread: write export const events = { 'order.paid': v.object({ … }) }, one key per event name`,
      `src/events.ts:${at(source, "'no spaces'")}: events: an event name is 1 to 128 letters, digits, '.', '-', '_' or '/', such as 'order.paid' (got "no spaces")`,
      `src/events.ts:${at(source, "'ok'")}: events declares "ok" twice`,
    ])
  })

  it('reports a missing export, a value that is no object written there, and two files', async () => {
    expect((await scan({ 'src/events.ts': 'export const schemas = {}\n' })).errors).toEqual([
      "src/events.ts:1:1: exports no events: write export const events = { 'order.paid': v.object({ … }) }, one key per event name",
    ])
    const imported = "import { all } from './all.ts'\nexport const events = all\n"
    expect((await scan({ 'src/events.ts': imported })).errors).toEqual([
      `src/events.ts:${at(imported, 'all\n')}: events must be an object written in this file: write export const events = { 'order.paid': v.object({ … }) }, one key per event name`,
    ])
    const both = await scan({ 'src/events.ts': 'export const events = {}\n', 'src/events.mjs': 'export const events = {}\n' })
    expect(both.errors).toEqual([
      'src/events.mjs:1:1: event schemas are declared by both src/events.ts and src/events.mjs; keep one of them',
    ])
  })
})

describe('.svc/types.d.ts with events', () => {
  it('lists each event with the types of its schema, and types a task on events without an input by their data', () => {
    const text = renderTaskTypes(
      [{ kind: 'task', name: 'orders.receipt', file: 'src/api/orders/receipt.ts', on: ['order.paid', 'order.retried'] }],
      {
        file: 'src/events.ts',
        names: ['order.paid'],
      },
    )
    expect(text).toContain(
      "import type { TaskModuleInput, TaskModuleResult, ReceivedEventData, EventModuleData, EventModuleReceived } from 'svcjs'",
    )
    expect(text).toContain(
      'input: TaskModuleInput<typeof import("../src/api/orders/receipt.ts"), ReceivedEventData<"order.paid"> | ReceivedEventData<"order.retried">>',
    )
    expect(text).toContain(
      '  interface EventRegistry {\n    "order.paid": {\n      data: EventModuleData<typeof import("../src/events.ts"), "order.paid">\n      received: EventModuleReceived<typeof import("../src/events.ts"), "order.paid">\n    }\n  }\n',
    )
    // Without events, nothing about them.
    expect(renderTaskTypes([])).not.toMatch(/EventRegistry|EventModule|ReceivedEventData/)
  })
})

import { describe, expect, test } from 'vitest'
import { adviseRoute } from '../../src/manifest.ts'
import { scanRoute } from './_helpers.ts'

async function advise(source: string) {
  const { route, errors } = await scanRoute(source)
  expect(errors).toEqual([])
  return { advice: adviseRoute(route), signals: route.signals.map((s) => s.kind), reasons: route.signals.map((s) => s.message) }
}

const handler = `export function GET() { return 'ok' }\n`

// Issue "Manifest and CLI": the advisor reads module-scope timers
// (setInterval) "or other background loops". Two common spellings of a
// periodic job are not setInterval: a setTimeout that re-arms itself, and
// iterating node:timers/promises' setInterval. Both keep working between
// requests, which a function freezes or discards.
describe('periodic work started at load without setInterval', () => {
  test.each([
    ['a function that re-arms setTimeout with itself', `function tick() {\n  flush()\n  setTimeout(tick, 1000)\n}\ntick()\n`, 3],
    ['an async function that re-arms through an arrow', `async function poll() {\n  await pull()\n  setTimeout(() => poll(), 5000)\n}\nvoid poll()\n`, 3],
    ['a timers import', `import { setTimeout as later } from 'node:timers'\nfunction beat() {\n  later(beat, 10)\n}\nbeat()\n`, 3],
  ])('%s is a module timer', async (_, source, line) => {
    const { signals, reasons, advice } = await advise(source + handler)
    expect(signals).toEqual(expect.arrayContaining(['module-timer']))
    expect(reasons.find((r) => r.startsWith('re-arms setTimeout'))).toContain(`(line ${line})`)
    expect(advice).toMatchObject({ severity: 'warn', provider: 'persistent-host', confidence: 'high' })
  })

  test('for await over node:timers/promises setInterval at load is a module timer', async () => {
    const { signals, reasons, advice } = await advise(`import { setInterval } from 'node:timers/promises'\nfor await (const _ of setInterval(60_000)) {\n  await refresh()\n}\n${handler}`)
    expect(signals).toContain('module-timer')
    expect(reasons).toContain('iterates setInterval from timers/promises at module scope (line 2): the timer runs between requests, which a function freezes or discards')
    expect(advice.severity).toBe('warn')
  })

  test('the same through a namespace import, inside a function called at load', async () => {
    const { signals } = await advise(`import * as timers from 'timers/promises'\nasync function every() {\n  for await (const _ of timers.setInterval(1000)) ping()\n}\nevery()\n${handler}`)
    expect(signals).toContain('module-timer')
  })

  test('a one-shot setTimeout at load, or a re-arming one inside a handler, is not', async () => {
    const once = await advise(`setTimeout(() => warm(), 100)\n${handler}`)
    expect(once.signals).toEqual([])
    const inHandler = await advise(`function retry() { setTimeout(retry, 100) }\nexport function GET() { retry() }\n`)
    expect(inHandler.signals).toEqual([])
  })

  test('for await over another iterable at load is not', async () => {
    const { signals } = await advise(`import { setInterval } from 'node:timers/promises'\nfor await (const row of readRows()) load(row)\nexport async function GET() { for await (const _ of setInterval(10)) break }\n`)
    expect(signals).toEqual(['node-builtin'])
  })
})

import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { startDevServer, type DevServer } from '../../src/dev/server.ts'
import { recordingLogger, write } from './_helpers.ts'

describe('svc dev and modules shared between routes', () => {
  let root: string
  let dev: DevServer | undefined

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'svc-dev-'))
    await write(root, 'src/lib/store.ts', `export const items: string[] = []\nexport const label = 'v1'\n`)
    await write(
      root,
      'src/api/items.ts',
      `import { items } from '../lib/store.ts'\nexport async function POST(req: any) { items.push((await req.json()).name); return { count: items.length } }\n`,
    )
    await write(
      root,
      'src/api/count.ts',
      `import { items, label } from '../lib/store.ts'\nexport function GET() { return { count: items.length, label } }\n`,
    )
    await write(
      root,
      'src/pages/index.ts',
      `import { items } from '../lib/store.ts'\nexport default function render() { return items.join(',') }\n`,
    )
    dev = await startDevServer({ root, port: 0, host: '127.0.0.1', logger: recordingLogger(), watch: false })
  })
  afterEach(async () => {
    await dev?.close()
    dev = undefined
    await rm(root, { recursive: true, force: true })
  })

  const add = (name: string) => fetch(`${dev!.url}/api/items`, { method: 'POST', body: JSON.stringify({ name }) }).then((res) => res.json())
  const count = () => fetch(`${dev!.url}/api/count`).then((res) => res.json())

  it('gives every route and page the same instance of a helper', async () => {
    await add('apple')
    expect(await count()).toEqual({ count: 1, label: 'v1' })
    expect(await (await fetch(`${dev!.url}/`)).text()).toBe('apple')
  })

  it('imports a changed route again against the helper the other routes hold', async () => {
    await add('apple')
    await write(
      root,
      'src/api/count.ts',
      `import { items, label } from '../lib/store.ts'\nexport function GET() { return { count: items.length, label, edited: true } }\n`,
    )
    await dev!.reload(['api/count.ts'])
    // The edit is live, and the store still holds what the unchanged route put in it.
    expect(await count()).toEqual({ count: 1, label: 'v1', edited: true })
    await add('pear')
    expect(await count()).toEqual({ count: 2, label: 'v1', edited: true })
  })

  it('imports everything again, sharing the new helper, when the helper changes', async () => {
    await add('apple')
    await write(root, 'src/lib/store.ts', `export const items: string[] = []\nexport const label = 'v2'\n`)
    await dev!.reload(['lib/store.ts'])
    expect(await count()).toEqual({ count: 0, label: 'v2' })
    await add('pear')
    expect(await count()).toEqual({ count: 1, label: 'v2' })
    expect(await (await fetch(`${dev!.url}/`)).text()).toBe('pear')
  })

  it('answers errors thrown from svc’s own classes with their status and code', async () => {
    await write(
      root,
      'src/api/taken.ts',
      `import { SvcError } from 'svcjs'\nexport function GET() { throw new SvcError('That name is taken', 'NAME_TAKEN', 409) }\n`,
    )
    await dev!.reload(['api/taken.ts'])
    const res = await fetch(`${dev!.url}/api/taken`)
    expect(res.status).toBe(409)
    expect((await res.json()).code).toBe('NAME_TAKEN')
  })
})

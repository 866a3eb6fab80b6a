import { describe, expect, it } from 'vitest'
import { scanPage, scanRoute } from './_helpers.ts'

// Editors, tsc and oxc's own diagnostics do not count a byte order mark as a
// column: `file:line:col` must point at the same place with or without one.
const BOM = '\uFEFF'

describe('a file that starts with a byte order mark', () => {
  it('config errors on the first line keep the columns an editor shows', async () => {
    const source = `export const route = { kind: 'task', retries: FIVE }\nexport async function POST() {}\n`
    const plain = await scanRoute(source)
    const marked = await scanRoute(BOM + source)
    expect(plain.errors).toEqual(['src/api/route.ts:1:47: route.retries must be a static literal, not a reference to FIVE; write the value inline'])
    expect(marked.errors).toEqual(plain.errors)
  })

  it('syntax errors on the first line keep their column', async () => {
    const plain = await scanRoute('const x = ;\n')
    const marked = await scanRoute(`${BOM}const x = ;\n`)
    expect(plain.errors[0]).toMatch(/^src\/api\/route\.ts:1:11: syntax error/)
    expect(marked.errors).toEqual(plain.errors)
  })

  it('page errors and route signals are located the same way', async () => {
    const page = `export const page = { mode: MODE }\nexport default () => 'hi'\n`
    expect((await scanPage(BOM + page)).errors).toEqual((await scanPage(page)).errors)
    const timer = `setInterval(() => {}, 1000)\nexport function GET() {}\n`
    const signal = (await scanRoute(BOM + timer)).route.signals[0]
    expect(signal).toMatchObject({ kind: 'module-timer', line: 1, column: 1 })
  })
})

import { describe, expect, test } from 'vitest'
import { at, readLiteral, scanPage, scanRoute } from './_helpers.ts'

describe('accepted static literals', () => {
  test.each([
    ['single-quoted strings', `'task'`, 'task'],
    ['double-quoted strings', `"task"`, 'task'],
    ['finite numbers', '30000', 30000],
    ['decimals and exponents', '1.5e3', 1500],
    ['numeric separators', '120_000', 120000],
    ['hex numbers', '0x10', 16],
    ['negative numbers', '-1', -1],
    ['a leading plus', '+5', 5],
    ['booleans', 'true', true],
    ['null', 'null', null],
    ['arrays', `['a', 1, false]`, ['a', 1, false]],
    ['nested objects', `{ compute: { class: 'dedicated', cpu: 2 } }`, { compute: { class: 'dedicated', cpu: 2 } }],
    ['quoted and numeric keys', `{ 'max-age': 1, 2: 'two' }`, { 'max-age': 1, '2': 'two' }],
    ['as const', `{ kind: 'task' } as const`, { kind: 'task' }],
    ['satisfies T', `{ kind: 'task' } satisfies RouteConfig`, { kind: 'task' }],
    ['as const inside satisfies', `({ retries: 2 } as const) satisfies RouteConfig`, { retries: 2 }],
    ['parentheses', `(((30_000)))`, 30000],
    ['as const on a nested value', `{ origins: ['https://a.example'] as const }`, { origins: ['https://a.example'] }],
  ])('%s', (_, expr, expected) => {
    const result = readLiteral(expr)
    expect(result.problems).toEqual([])
    expect(result.ok).toBe(true)
    expect(result.value).toEqual(expected)
  })
})

describe('rejected forms point at the offending node', () => {
  // Each source declares `route`; the error must point at `needle`.
  test.each([
    ['a call', `export const route = {\n  kind: 'task',\n  timeout: ms('5m'),\n}\n`, `ms('5m')`, 'must be a static literal, not a call'],
    ['a new expression', `export const route = { timeout: new Number(5) }\n`, 'new Number', 'not a call'],
    ['a referenced identifier', `const FIVE = 5\nexport const route = { retries: FIVE }\n`, 'FIVE }', 'not a reference to FIVE'],
    ['undefined', `export const route = { retries: undefined }\n`, 'undefined', 'not undefined'],
    ['a spread', `const base = { kind: 'task' }\nexport const route = { ...base, retries: 1 }\n`, '...base', 'not a spread'],
    [
      'a spread in an array',
      `const list = ['https://a.example']\nexport const route = { kind: 'hot', origins: [...list] }\n`,
      '...list',
      'not a spread',
    ],
    ['a computed property', `export const route = {\n  ['kind']: 'task',\n}\n`, `'kind'`, 'computed property key'],
    ['a template literal', 'export const route = { kind: `task` }\n', '`task`', 'not a template literal'],
    [
      'a template literal with a substitution',
      'const k = "task"\nexport const route = { kind: `${k}` }\n',
      '`${k}`',
      'not a template literal',
    ],
    ['a shorthand property', `const retries = 2\nexport const route = { kind: 'task', retries }\n`, 'retries }', 'shorthand property'],
    ['Infinity', `export const route = { kind: 'task', timeout: Infinity }\n`, 'Infinity', 'must be a finite number'],
    ['-Infinity', `export const route = { kind: 'task', timeout: -Infinity }\n`, '-Infinity', 'must be a finite number'],
    ['NaN', `export const route = { kind: 'task', retries: NaN }\n`, 'NaN', 'must be a finite number'],
    ['a number literal that overflows', `export const route = { kind: 'task', timeout: 1e999 }\n`, '1e999', 'must be a finite number'],
    ['arithmetic', `export const route = { kind: 'task', timeout: 60 * 1000 }\n`, '60 * 1000', 'not an expression'],
    ['a property access', `export const route = { kind: Kinds.task }\n`, 'Kinds.task', 'not a property access'],
    ['a function', `export const route = { kind: 'task', retries: () => 2 }\n`, '() => 2', 'not a function'],
    ['a method', `export const route = { kind() { return 'task' } }\n`, 'kind()', 'method or accessor'],
    ['a regular expression', `export const route = { kind: /task/ }\n`, '/task/', 'regular expression'],
    ['a BigInt', `export const route = { kind: 'task', retries: 2n }\n`, '2n', 'BigInt'],
    ['a negated identifier', `const two = 2\nexport const route = { kind: 'task', retries: -two }\n`, '-two', 'not an expression'],
    ['a call as the whole route', `export const route = defineRoute({ kind: 'task' })\n`, 'defineRoute', 'not a call'],
  ])('%s', async (_, source, needle, message) => {
    const { errors } = await scanRoute(source)
    expect(errors).toHaveLength(1)
    expect(errors[0]).toMatch(new RegExp(`^src/api/route\\.ts:${at(source, needle, 'route =')}: `))
    expect(errors[0]).toContain(message)
  })

  test('a call is reported at line 3, column 12', async () => {
    const { errors } = await scanRoute(`export const route = {\n  kind: 'task',\n  timeout: ms('5m'),\n}\n`)
    expect(errors).toEqual([`src/api/route.ts:3:12: route.timeout must be a static literal, not a call (ms('5m')); write the value itself`])
  })

  test('columns count UTF-16 code units after non-ASCII text', async () => {
    const source = `// ünïcödé 😀\nexport const route = { kind: 'task', /* 😀 */ timeout: ms(1) }\n`
    const { errors } = await scanRoute(source)
    expect(errors[0]).toMatch(new RegExp(`:${at(source, 'ms(1)')}: `))
    expect(errors[0]).toContain(':2:')
  })

  test('every problem in one config is reported, not only the first', async () => {
    const source = `const X = 1\nexport const route = {\n  kind: 'task',\n  retries: X,\n  timeout: \`5\`,\n  compute: { ...X },\n}\n`
    const { errors } = await scanRoute(source)
    expect(errors.map((e) => e.split(': ')[0])).toEqual([
      `src/api/route.ts:${at(source, 'X,')}`,
      `src/api/route.ts:${at(source, '`5`')}`,
      `src/api/route.ts:${at(source, '...X')}`,
    ])
  })

  test('the kind and schedule exports follow the same rules', async () => {
    const source = `const K = 'task'\nexport const kind = K\nexport const schedule = \`* * * * *\`\n`
    const { errors } = await scanRoute(source)
    expect(errors).toEqual([
      `src/api/route.ts:2:21: kind must be a static literal, not a reference to K; write the value inline`,
      expect.stringMatching(/^src\/api\/route\.ts:3:25: schedule must be a quoted string, not a template literal/),
    ])
  })

  test('a route re-exported from another module cannot be read', async () => {
    const { errors } = await scanRoute(`export { route } from './shared.ts'\nexport function GET() {}\n`)
    expect(errors).toEqual([
      `src/api/route.ts:1:10: route is imported from another module; declare it in this file, the scanner does not follow imports`,
    ])
  })

  test('a route declared first and exported later is read from its declaration', async () => {
    const { route, errors } = await scanRoute(
      `const route = { kind: 'task', retries: 3 } as const\nexport { route }\nexport async function POST() {}\n`,
    )
    expect(errors).toEqual([])
    expect(route.kind).toBe('task')
    expect(route.retries).toBe(3)
  })
})

describe('the scanner reads syntax, not text', () => {
  test('strings, template text, regular expressions and comments that look like config are ignored', async () => {
    const source = [
      `// export const route = { kind: 'hot' }`,
      `/* export const route = { kind: 'task' } */`,
      `const text = "export const route = { kind: 'task' }"`,
      'const template = `\nexport const route = { kind: 1 }\nexport function POST() {}\n`',
      `const pattern = /export const route = \\{ kind: 'task' \\}/`,
      `export function GET() { return [text, template, pattern] }`,
      '',
    ].join('\n')
    const { route, errors } = await scanRoute(source)
    expect(errors).toEqual([])
    expect(route.kind).toBe('serverless')
    expect(route.methods).toEqual(['GET'])
  })

  test('a syntax error is reported at its position', async () => {
    const { errors } = await scanRoute(`export const route = { kind: 'task' \nexport function POST() {}\n`)
    expect(errors).toHaveLength(1)
    expect(errors[0]).toMatch(/^src\/api\/route\.ts:2:1: syntax error: /)
  })
})

// Editors, tsc and oxc's own diagnostics do not count a byte order mark as a
// column: `file:line:col` must point at the same place with or without one.
describe('positions in a file that starts with a byte order mark', () => {
  const BOM = '\uFEFF'

  test('config errors on the first line keep the columns an editor shows', async () => {
    const source = `export const route = { kind: 'task', retries: FIVE }\nexport async function POST() {}\n`
    const plain = await scanRoute(source)
    const marked = await scanRoute(BOM + source)
    expect(plain.errors).toEqual([
      'src/api/route.ts:1:47: route.retries must be a static literal, not a reference to FIVE; write the value inline',
    ])
    expect(marked.errors).toEqual(plain.errors)
  })

  test('syntax errors on the first line keep their column', async () => {
    const plain = await scanRoute('const x = ;\n')
    const marked = await scanRoute(`${BOM}const x = ;\n`)
    expect(plain.errors[0]).toMatch(/^src\/api\/route\.ts:1:11: syntax error/)
    expect(marked.errors).toEqual(plain.errors)
  })

  test('page errors and route signals are located the same way', async () => {
    const page = `export const page = { mode: MODE }\nexport default () => 'hi'\n`
    expect((await scanPage(BOM + page)).errors).toEqual((await scanPage(page)).errors)
    const timer = `setInterval(() => {}, 1000)\nexport function GET() {}\n`
    const signal = (await scanRoute(BOM + timer)).route.signals[0]
    expect(signal).toMatchObject({ kind: 'module-timer', line: 1, column: 1 })
  })
})

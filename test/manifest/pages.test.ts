import { describe, expect, test } from 'vitest'
import { at, scanPage } from './_helpers.ts'

describe('page config', () => {
  test('a page without a page export is server-rendered', async () => {
    const { page, errors } = await scanPage(`export default () => '<h1>hi</h1>'\n`, 'src/pages/about.ts')
    expect(errors).toEqual([])
    expect(page).toEqual({ path: '/about', file: 'src/pages/about.ts', mode: 'server', revalidate: null, tags: [] })
  })

  test('mode, revalidate and tags are read', async () => {
    const { page } = await scanPage(
      `export const page = { mode: 'hybrid', revalidate: 60, tags: ['home', 'news'] } as const\nexport default () => ''\n`,
    )
    expect(page).toMatchObject({ mode: 'hybrid', revalidate: 60, tags: ['home', 'news'] })
  })

  test('styles: [identifier] is left out of the manifest, not an error', async () => {
    const { page, errors } = await scanPage(
      `import sheet from './_page.css.ts'\nexport const page = { mode: 'static', styles: [sheet], title: t('About') }\nexport default () => ''\n`,
    )
    expect(errors).toEqual([])
    expect(page).toEqual({ path: '/page', file: 'src/pages/page.ts', mode: 'static', revalidate: null, tags: [] })
    expect(page).not.toHaveProperty('styles')
  })

  test.each([
    [
      'an identifier',
      `const MODE = 'static'\nexport const page = { mode: MODE }\n`,
      'MODE }',
      'page.mode must be a static literal, not a reference to MODE; write the value inline',
    ],
    [
      'a template literal',
      'export const page = { mode: `static` }\n',
      '`static`',
      'page.mode must be a quoted string, not a template literal (`static`)',
    ],
    [
      'a number',
      `export const page = { mode: 1 }\n`,
      '1 }',
      `page.mode must be a quoted string, one of 'static', 'client', 'server', 'hybrid' (got 1)`,
    ],
    [
      'an unknown mode',
      `export const page = { mode: 'edge' }\n`,
      `'edge'`,
      `page.mode must be a quoted string, one of 'static', 'client', 'server', 'hybrid' (got 'edge')`,
    ],
  ])('mode as %s is rejected', async (_, source, needle, message) => {
    const { errors } = await scanPage(source)
    expect(errors).toEqual([`src/pages/page.ts:${at(source, needle, 'page =')}: ${message}`])
  })

  test.each([
    ['revalidate: FIVE_MINUTES', 'FIVE_MINUTES', 'page.revalidate must be a static literal, not a reference to FIVE_MINUTES'],
    ['revalidate: 60 * 5', '60 * 5', 'page.revalidate must be a static literal, not an expression'],
    [`revalidate: '60'`, `'60'`, `page.revalidate must be a number of seconds, 0 or more (got '60')`],
    ['tags: [TAG]', 'TAG]', 'page.tags[0] must be a static literal, not a reference to TAG'],
    [`tags: 'home'`, `'home'`, `page.tags must be an array of strings (got 'home')`],
    ['...base', '...base', 'page must not use a spread'],
    ['[key]: 1', 'key]', 'page must not use a computed property key'],
    ['tags', 'tags', 'page.tags is a shorthand property'],
  ])('%s is rejected', async (field, needle, message) => {
    const source = `export const page = { mode: 'hybrid', ${field} }\n`
    const { errors } = await scanPage(source)
    expect(errors).toHaveLength(1)
    expect(errors[0]).toMatch(new RegExp(`^src/pages/page\\.ts:${at(source, needle, 'hybrid')}: `))
    expect(errors[0]).toContain(message)
  })

  test('page must be an object literal', async () => {
    const { errors } = await scanPage(`export const page = definePage({ mode: 'static' })\n`)
    expect(errors).toEqual([
      `src/pages/page.ts:1:21: page must be an object literal such as { mode: 'static' } (got definePage({ mode: 'static' }))`,
    ])
  })
})

import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const repo = fileURLToPath(new URL('../..', import.meta.url))
const srvxExports = Object.keys(
  (JSON.parse(readFileSync(join(repo, 'node_modules/srvx/package.json'), 'utf8')) as { exports: object }).exports,
)

function sources(dir: string): string[] {
  return readdirSync(join(repo, dir), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && /\.m?ts$/.test(entry.name))
    .map((entry) => relative(repo, join(entry.parentPath, entry.name)))
}

const files = [...sources('src'), ...sources('targets')]

describe('the host uses srvx only through its public API', () => {
  it('imports srvx only from entry points its package exports', () => {
    const imports = files.flatMap((file) =>
      [...readFileSync(join(repo, file), 'utf8').matchAll(/from '(srvx(?:\/[^']*)?)'/g)].map((match) => ({
        file,
        entry: match[1].replace(/^srvx/, '.') || '.',
      })),
    )
    expect(imports.length).toBeGreaterThan(0)
    expect(imports.filter(({ entry }) => !srvxExports.includes(entry))).toEqual([])
  })

  it('touches no underscore member of a srvx request or response', () => {
    // srvx's own members start with `_` (`_toNodeResponse`, `_request`, `_url`): internals that change without notice.
    const uses = files.flatMap((file) =>
      readFileSync(join(repo, file), 'utf8')
        .split('\n')
        .flatMap((line, i) =>
          /\b_(toNodeResponse|request|response|url|headers|abortController)\b/.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : [],
        ),
    )
    expect(uses).toEqual([])
  })
})

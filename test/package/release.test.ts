// `npm run release`: both packages versioned together, and each checked by
// `npm publish --dry-run`. Run on a copy of the two packages' manifests and
// the lock file, so the repository's own versions stay as they are.
import { spawnSync } from 'node:child_process'
import { cpSync, mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, expect, inject, it } from 'vitest'

const repo = fileURLToPath(new URL('../..', import.meta.url))
const dir = mkdtempSync(join(tmpdir(), 'svc-release-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

for (const file of [
  'scripts/release.ts',
  'package.json',
  'package-lock.json',
  'README.md',
  'packages/create-svcjs/package.json',
  'packages/create-svcjs/README.md',
]) {
  mkdirSync(join(dir, file, '..'), { recursive: true })
  cpSync(join(repo, file), join(dir, file))
}
const readJson = (file: string) => JSON.parse(readFileSync(join(dir, file), 'utf8'))
const release = (...args: string[]) =>
  spawnSync(process.execPath, ['scripts/release.ts', ...args, '--ignore-scripts'], { cwd: dir, encoding: 'utf8' })

it('checks the repository as it is: one version, and both packages publish cleanly in a dry run', () => {
  const { status, stdout, stderr } = spawnSync(process.execPath, ['scripts/release.ts', '--check', '--ignore-scripts'], {
    cwd: repo,
    encoding: 'utf8',
  })
  expect(status, stderr).toBe(0)
  const { version } = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8'))
  expect(stdout).toBe(`svcjs@${version}: npm publish --dry-run is clean\ncreate-svcjs@${version}: npm publish --dry-run is clean\n`)
})

it('sets one version on both packages and the lock file, and refuses packages whose versions differ', () => {
  const bumped = release('0.2.0-rc.1')
  expect(bumped.status, bumped.stderr).toBe(0)
  expect(bumped.stdout).toContain('create-svcjs@0.2.0-rc.1: npm publish --dry-run is clean')
  expect(readJson('package.json').version).toBe('0.2.0-rc.1')
  expect(readJson('packages/create-svcjs/package.json').version).toBe('0.2.0-rc.1')
  expect(readJson('package-lock.json').packages[''].version).toBe('0.2.0-rc.1')

  const create = readJson('packages/create-svcjs/package.json')
  writeFileSync(join(dir, 'packages/create-svcjs/package.json'), JSON.stringify({ ...create, version: '0.1.9' }))
  const refused = release('--check')
  expect(refused.status).toBe(1)
  expect(refused.stderr).toContain('the packages carry different versions (svcjs 0.2.0-rc.1, create-svcjs 0.1.9)')
  expect(release('two').stderr).toContain('"two" is not a version')
})

it("npm pack builds dist/ once (its prepack script), as this project's global setup ran it", () => {
  expect(inject('svcPack').builds).toBe(1)
})

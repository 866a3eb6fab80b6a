import { configDefaults, defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    testTimeout: 20_000,
    hookTimeout: 30_000,
    // The suites start real servers, child processes and workerd; two cores are plenty busy.
    pool: 'forks',
    // Two files at a time. Vitest's default is one fewer than the cores, so
    // one at a time on a two-core machine, while most of the long files
    // (processes, workerd, Postgres, Chromium) spend their time waiting.
    maxWorkers: 2,
    env: { NODE_ENV: 'test' },
    // Fake clocks move the timers a task sets (backoff, sleeps, deadlines) and
    // Date; setImmediate stays real, since stores use it to batch their I/O.
    fakeTimers: { toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] },
    projects: [
      {
        extends: true,
        test: { name: 'svc', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, 'test/postgres/**', 'test/package/**'] },
      },
      {
        // svc as a user gets it, from one tarball that the global setup packs.
        extends: true,
        test: { name: 'package', include: ['test/package/**/*.test.ts'], globalSetup: ['test/package/_global-setup.ts'] },
      },
      {
        // Its own project so that the embedded Postgres starts only when
        // one of these files runs.
        extends: true,
        test: {
          name: 'postgres',
          include: ['test/postgres/**/*.test.ts'],
          globalSetup: ['test/postgres/_global-setup.ts'],
        },
      },
    ],
  },
})

import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    // The suites start real servers, child processes and workerd; two cores are plenty busy.
    pool: 'forks',
    env: { NODE_ENV: 'test' },
  },
})

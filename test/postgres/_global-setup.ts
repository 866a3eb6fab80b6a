// globalSetup of the `postgres` vitest project: one embedded Postgres for
// every test file of the project, started only when one of them runs.
import type { TestProject } from 'vitest/node'
import { startEmbeddedPostgres } from './_embedded.ts'

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const pg = await startEmbeddedPostgres()
  project.provide('postgresUrl', pg.url)
  return () => pg.stop()
}

declare module 'vitest' {
  export interface ProvidedContext {
    postgresUrl: string
  }
}

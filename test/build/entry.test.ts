// The generated entry's telemetry lines: the OpenTelemetry API the app
// depends on, and the logs API of the SDK 2.x line when it depends on that
// too, which a worker could not load as it runs.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, it } from 'vitest'
import { appSource, appTelemetry } from '../../src/build/entry.ts'

const root = mkdtempSync(join(tmpdir(), 'svc-entry-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))

it("hands otelTelemetry the app's @opentelemetry/api, and @opentelemetry/api-logs as logsApi when the app depends on it", () => {
  const api = appTelemetry(root, { '@opentelemetry/api': '^1.9.0' })
  expect(api).toEqual({ instrumentation: undefined, otel: true, logsApi: false })
  expect(appSource(root, [], [], undefined, api)).toContain('  telemetry: otelTelemetry(otelApi),')

  const withLogs = appTelemetry(root, { '@opentelemetry/api': '^1.9.0', '@opentelemetry/api-logs': '^0.200.0' })
  const source = appSource(root, [], [], undefined, withLogs)
  expect(source).toContain(`import * as otelLogsApi from '@opentelemetry/api-logs'`)
  expect(source).toContain('  telemetry: otelTelemetry(otelApi, { logsApi: otelLogsApi }),')

  expect(appSource(root, [], [], undefined, appTelemetry(root, {}))).not.toContain('telemetry:')
})

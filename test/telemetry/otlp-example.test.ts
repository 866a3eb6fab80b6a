// The setup docs/observability.md shows, as a user runs it: its
// instrumentation.mjs, taken from the page, registers the SDK with the
// OTLP/HTTP exporter, and a server started with `node --import` on it sends
// a run's whole trace to an OTLP receiver (this test's HTTP server).
import { expect, it } from 'vitest'
import { until } from '../_helpers.ts'
import { attribute, otlpReceiver, tracedServer } from './_otlp.ts'

it('sends every span of a run to an OTLP/HTTP receiver, set up as the docs show', async () => {
  const receiver = await otlpReceiver()
  const { url } = await tracedServer(receiver.endpoint('one'))
  const traceId = 'aaaabbbbccccddddeeeeffff00001111'
  const res = await fetch(`${url}/__tasks/jobs.report`, {
    method: 'POST',
    headers: { authorization: 'Bearer s', 'content-type': 'application/json', traceparent: `00-${traceId}-1111222233334444-01` },
    body: '{}',
  })
  expect(res.status).toBe(202)
  const { id } = (await res.json()) as { id: string }
  const ofRun = () => receiver.spans.filter((span) => attribute(span, 'svc.run.id') === id)
  // create, two executions (before and after the sleep), and two steps.
  await until(() => ofRun().length >= 5, 15_000)
  expect(
    ofRun()
      .map((span) => span.name)
      .sort(),
  ).toEqual(['create jobs.report', 'process jobs.report', 'process jobs.report', 'step query', 'step render'])
  expect(ofRun().every((span) => span.traceId === traceId)).toBe(true)
  const request = receiver.spans.find((span) => span.name === 'POST /__tasks/{name}' && span.traceId === traceId)
  expect(request?.parentSpanId).toBe('1111222233334444')
})

/**
 * The event streams svc ships, for the hosts that serve them:
 * `createSvcHandler` passes them to the admin surface. Only it imports this
 * module, so the Cloudflare worker's bundle leaves the streams out
 * (`streams.ts`).
 */
import { openRunEventStream } from './run-change-stream.ts'
import { createRunStreamHandler } from './run-stream.ts'
import { type EventStreams, notStreamed, RUNS_ELSEWHERE } from './streams.ts'

export const EVENT_STREAMS: EventStreams = {
  create(options) {
    const { runtime, R, logger, runEvents } = options
    return {
      events() {
        const listen = runtime.onRunChange?.bind(runtime)
        return listen ? openRunEventStream(runtime, listen, R, logger, runEvents) : notStreamed(R, RUNS_ELSEWHERE)
      },
      run: createRunStreamHandler(options),
    }
  },
}

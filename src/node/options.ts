/** Options and result of `startSvcServer()`. */
import { type Telemetry, telemetryOptionProblem } from '../runtime/telemetry/types.ts'
import type { Server as HttpServer } from 'node:http'
import type { SvcHandler } from '../runtime/handler.ts'
import type { SvcCacheConfig } from '../runtime/pages/isr.ts'
import type { RunStore } from '../runtime/tasks/index.ts'
import type { RunEventsOptions } from '../runtime/admin/streams.ts'
import { describe } from '../runtime/describe.ts'
import { checkAppBasics } from '../runtime/app/create.ts'
import type { EventSchemas } from '../runtime/events/schemas.ts'
import type { GlobalHooks, Logger, RuntimeApiRoute, RuntimePage, TaskRuntime } from '../types.ts'

export const DEFAULT_PORT = 3000
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 30_000
/** The `ws` library would take 100 MiB per message; a hot route rarely needs more than this. */
export const DEFAULT_MAX_MESSAGE_BYTES = 1024 * 1024
export const DEFAULT_MAX_BUFFERED_BYTES = 8 * 1024 * 1024

/** Limits of the WebSocket connections of hot routes. */
export interface WebSocketOptions {
  /**
   * Largest inbound message, in bytes, all its fragments together. A larger
   * one closes the connection with 1009 (message too big, RFC 6455 §7.4.1)
   * before it is buffered.
   * @default 1048576 (1 MiB)
   */
  maxMessageBytes?: number
  /**
   * Most bytes a peer may have queued for sending (`peer.bufferedAmount`).
   * A client that stops reading would otherwise make the server hold all
   * that is sent to it. Past this the connection is dropped and the route's
   * close listeners get 1008 (policy violation, RFC 6455 §7.4.1). Note: a
   * single message larger than this closes the connection too.
   * @default 8388608 (8 MiB)
   */
  maxBufferedBytes?: number
}

export interface SvcServerOptions {
  /** API routes, each a manifest entry plus its loaded module exports (`loadApiRoutes`). */
  apiRoutes: RuntimeApiRoute[]
  /**
   * Page routes (`loadPages`). Server and hybrid pages render at request
   * time; static and client pages are served from `staticDirs`.
   */
  pages: RuntimePage[]
  /**
   * The app's event schemas (the `events` export of `src/events.ts`) for
   * the runtime the server creates; see `TaskRuntimeOptions.events`.
   */
  events?: EventSchemas
  /**
   * Where spans, metrics and log records go (docs/observability.md). By
   * default, OpenTelemetry when `@opentelemetry/api` is installed (and
   * `SVC_TELEMETRY` is not `off`): requests and the runs of the runtime the
   * server creates are traced and measured through the providers the app
   * registers. `false` turns it off.
   */
  telemetry?: Telemetry | false
  /**
   * Port to listen on; `0` picks an ephemeral port (read it from `port`).
   * @default 3000
   */
  port?: number
  /**
   * Interface to bind.
   * @default the HOST environment variable, else '0.0.0.0' when NODE_ENV is production, else '127.0.0.1'
   */
  host?: string
  /**
   * ISR cache of hybrid pages; `false` turns it off (and unmounts
   * `POST /__svc/revalidate`).
   * @default {} (the memory store)
   */
  cache?: SvcCacheConfig | false
  /**
   * `{ onRequest?, onError?, onResponse? }`, each an array of hooks run in order.
   * @default no hooks
   */
  globalHooks?: GlobalHooks
  /**
   * Directories of static assets, tried in order after routes and pages;
   * relative paths resolve against the working directory.
   * @default none
   */
  staticDirs?: string[]
  /**
   * How long `close()` (and SIGTERM/SIGINT) waits for in-flight requests,
   * WebSocket closing handshakes and task attempts before forcing.
   * @default 30000
   */
  shutdownTimeoutMs?: number
  /**
   * Installs SIGTERM/SIGINT handlers that drain and then end the process
   * with the signal.
   * @default true, except when NODE_ENV is test
   */
  installSignalHandlers?: boolean
  /**
   * The task runtime to serve and schedule. The server starts and stops its
   * scheduler and drains it on close, but only closes a runtime it created.
   * @default createTaskRuntime({ routes: apiRoutes, store, env, logger })
   */
  runtime?: TaskRuntime
  /**
   * Run store for the runtime the server creates. Ignored with `runtime`.
   * Without it, the store `env.SVC_STORE_URL` names (`postgres://…`,
   * `postgresql://…`, `sqlite:<path>[?shared]`, `file:<path>[?shared]` or `memory`; see
   * `storeFromEnv`), which the server opens before it listens and closes on
   * `close()`. A store passed here is the caller's to close.
   * @default the store SVC_STORE_URL names, else a MemoryRunStore
   */
  store?: RunStore
  /**
   * Largest request body, in bytes; larger ones get 413 `PAYLOAD_TOO_LARGE`.
   * @default 1048576 (1 MiB), or the runtime's `maxPayloadBytes` when that is larger
   */
  bodyLimit?: number
  /**
   * The largest input, result, step output and token payload of a run, in
   * bytes of UTF-8 JSON, for the runtime the server creates (see
   * `TaskRuntimeOptions.maxPayloadBytes`). Ignored with `runtime`.
   * @default 1048576
   */
  maxPayloadBytes?: number
  /**
   * Most handlers the runtime the server creates runs at once; runs past
   * it wait their turn (see `TaskRuntimeOptions.maxConcurrentRuns`).
   * Ignored with `runtime`.
   * @default 100
   */
  maxConcurrentRuns?: number
  /**
   * Environment: SVC_TASK_SECRET, NODE_ENV, HOST,
   * SVC_DISABLE_IN_PROCESS_CRON.
   * @default process.env
   */
  env?: Record<string, string | undefined>
  /**
   * Adds the error message and stack to 500 bodies, and prints each entry a
   * run of the runtime the server creates logs with `ctx.log`.
   * @default env.NODE_ENV === 'development'
   */
  dev?: boolean
  /** @default console */
  logger?: Logger
  /**
   * `{ maxMessageBytes?, maxBufferedBytes? }`: limits of hot-route WebSockets.
   * @default { maxMessageBytes: 1048576, maxBufferedBytes: 8388608 }
   */
  websocket?: WebSocketOptions
  /**
   * Serves the runs dashboard at `/__svc/dashboard` to everyone; the page
   * shows no data until the user enters the task secret. `false` never
   * serves it.
   * @default true when SVC_DASHBOARD is 1; else, when NODE_ENV is development, served to loopback peers only; else off
   */
  dashboard?: boolean
  /**
   * `{ maxStreams?, maxQueuedBytes? }`: limits of `GET /__tasks/events`, the
   * run-change stream. Past `maxStreams` open on the runtime, 503 with
   * `Retry-After`; a client that leaves more than `maxQueuedBytes` unread is
   * dropped.
   * @default { maxStreams: 64, maxQueuedBytes: 262144 }
   */
  runEvents?: RunEventsOptions
}

/** A server that runs: what `startSvcServer`, `startBunServer` and `startDenoServer` resolve with. */
export interface RunningServer {
  /** The port actually bound. */
  readonly port: number
  /**
   * `http://<host>:<port>`. Note: on Node the host is the one the server was
   * asked to bind; on Bun and Deno, the address the runtime bound (a HOST
   * such as `localhost` resolved).
   */
  readonly url: string
  /** The task runtime behind `/__tasks` and the scheduler (on Node, replaced by `reload` when the server created it). */
  readonly runtime: TaskRuntime
  /** The core fetch handler the server mounts (on Node, replaced by `reload`). */
  readonly handler: SvcHandler
  /**
   * Stops accepting connections; answers requests that still arrive (on
   * open keep-alive connections) with 503 `Connection: close`; closes
   * WebSockets with 1001; stops the scheduler; waits for in-flight requests
   * and task attempts up to `shutdownTimeoutMs`, then forces. Idempotent.
   */
  close(): Promise<void>
  /**
   * Starts the closing handshake on every open WebSocket, or only on those
   * whose route path `filter` accepts; the server keeps running.
   * @param code @default 1001
   */
  closeWebSockets(code?: number, reason?: string, filter?: (route: string) => boolean): void
}

export interface SvcServer extends RunningServer {
  /** The underlying Node `http.Server`. */
  readonly server: HttpServer
  /**
   * Swaps in new routes and pages without dropping a connection (the dev
   * server calls it on file changes). Requests already running finish on
   * the old code; open WebSockets stay on the module they opened with. A
   * runtime the server created is replaced by one built from the new task
   * routes over the same run store; in-flight attempts finish on the old one.
   */
  reload(app: { apiRoutes: RuntimeApiRoute[]; pages: RuntimePage[]; events?: EventSchemas }): Promise<void>
}

export function checkServerOptions(options: SvcServerOptions, where: string): void {
  if (options === null || typeof options !== 'object') {
    throw new TypeError(`${where}: options must be an object with apiRoutes and pages (got ${describe(options)})`)
  }
  const o = options as unknown as Record<string, unknown>
  if (!Array.isArray(o.apiRoutes)) throw new TypeError(`${where}: apiRoutes must be an array of API routes (got ${describe(o.apiRoutes)})`)
  if (!Array.isArray(o.pages)) throw new TypeError(`${where}: pages must be an array of pages; pass [] for none (got ${describe(o.pages)})`)
  if (o.port !== undefined && !(Number.isInteger(o.port) && (o.port as number) >= 0 && (o.port as number) <= 65535)) {
    throw new RangeError(`${where}: port must be a whole number from 0 to 65535 (got ${describe(o.port)})`)
  }
  const telemetryProblem = o.telemetry === false ? null : telemetryOptionProblem(o.telemetry)
  if (telemetryProblem) throw new TypeError(`${where}: ${telemetryProblem}, or false`)
  if (o.host !== undefined && (typeof o.host !== 'string' || o.host === '')) {
    throw new TypeError(`${where}: host must be a non-empty string (got ${describe(o.host)})`)
  }
  if (
    o.shutdownTimeoutMs !== undefined &&
    !(typeof o.shutdownTimeoutMs === 'number' && (o.shutdownTimeoutMs as number) >= 0 && Number.isFinite(o.shutdownTimeoutMs))
  ) {
    throw new RangeError(`${where}: shutdownTimeoutMs must be a number of milliseconds, 0 or more (got ${describe(o.shutdownTimeoutMs)})`)
  }
  if (o.installSignalHandlers !== undefined && typeof o.installSignalHandlers !== 'boolean') {
    throw new TypeError(`${where}: installSignalHandlers must be a boolean (got ${describe(o.installSignalHandlers)})`)
  }
  if (o.staticDirs !== undefined && (!Array.isArray(o.staticDirs) || o.staticDirs.some((d) => typeof d !== 'string' || d === ''))) {
    throw new TypeError(`${where}: staticDirs must be an array of directory paths (got ${describe(o.staticDirs)})`)
  }
  if (o.websocket !== undefined) {
    if (o.websocket === null || typeof o.websocket !== 'object') {
      throw new TypeError(`${where}: websocket must be an object with maxMessageBytes and maxBufferedBytes (got ${describe(o.websocket)})`)
    }
    for (const name of ['maxMessageBytes', 'maxBufferedBytes'] as const) {
      const value = (o.websocket as Record<string, unknown>)[name]
      if (value !== undefined && !(Number.isInteger(value) && (value as number) > 0)) {
        throw new RangeError(`${where}: websocket.${name} must be a positive whole number of bytes (got ${describe(value)})`)
      }
    }
  }
  checkAppBasics(o, where)
  // The options of the task surface (runtime, maxPayloadBytes, runEvents,
  // dashboard) are its own to check: the server hands them to it at its
  // edge (app-server.ts), once.
}

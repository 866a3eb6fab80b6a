/** What a route or page file declares: its kind, methods, compute and task options, and a page's render mode. */

/** How a route is invoked. `serverless` is the default when a file declares nothing. */
export type RouteKind = 'serverless' | 'hot' | 'task'

/** HTTP method handlers a route file may export; `HTTP_METHODS` lists them. */
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH' | 'HEAD' | 'OPTIONS'

/** Memory sizes a `function`-class route may select; `FUNCTION_MEMORY` lists them. */
export type FunctionMemory = '1gb' | '4gb' | '6gb' | '8gb' | '12gb'

/** Where a route runs. */
export type ComputeClass = 'function' | 'dedicated'

/** The `compute` object as a route file declares it. */
export interface ComputeConfig {
  /** @default 'function' (hot routes: 'dedicated') */
  class?: ComputeClass
  /**
   * `function`: one of `1gb`, `4gb`, `6gb`, `8gb`, `12gb`.
   * `dedicated`: any size such as `'512mb'` or `'2gb'`; preserved as declared.
   * @default '1gb' for `function`
   */
  memory?: string
  /** Dedicated only: whole CPUs, preserved in the manifest. */
  cpu?: number
}

/**
 * The exported `route` object of a route file. Every field must be a static
 * literal, and a field not declared here is a config error; write
 * `export const route = { … } satisfies RouteConfig` to make it a type error
 * too.
 */
export interface RouteConfig {
  /** @default 'serverless' */
  kind?: RouteKind
  /** Task only: extra attempts after the first failure. @default 0 */
  retries?: number
  /** Task only: per-attempt timeout in milliseconds. @default 30000 */
  timeout?: number
  /** @default { class: 'function', memory: '1gb' } */
  compute?: ComputeConfig
  /** Hot only: Origin allowlist for the WebSocket handshake. Unset means open. */
  origins?: string[]
  /** Task only: five-field cron expression (may also be a top-level `schedule` export). */
  schedule?: string
  /** Task only: IANA time zone the schedule is read in. @default 'UTC' */
  timezone?: string
  /**
   * Task only: the events that start a run of this task, one name or a list
   * (may also be a top-level `on` export). Each event sent starts one run,
   * with the event's data as input (docs/events.md).
   */
  on?: string | string[]
  /**
   * Task only: at most this many attempts of the task run at once (per value
   * of `key`, a dotted path into the input such as `'input.userId'`); runs
   * beyond it wait as `queued` and start in order of creation. A run with no
   * value at `key` shares one bucket with every other such run. With
   * `perKey`, `limit` caps every key together and `perKey` each one, and
   * free slots go to the keys in turn, the key running fewest first, so a
   * key with thousands queued does not hold back one with a few
   * (docs/flow-control.md "Fair shares").
   */
  concurrency?: number | { limit: number; key?: string; perKey?: number }
  /**
   * Task only: at most `limit` run starts per `periodSeconds` (a sliding
   * window), per value of `key`; runs beyond it wait as `queued`.
   */
  rateLimit?: { limit: number; periodSeconds: number; key?: string }
  /**
   * Task only: triggers within `seconds` of the last one for the same `key`
   * value collapse into one run, with the latest input, started `seconds`
   * after the last trigger.
   */
  debounce?: { seconds: number; key?: string }
  /**
   * Task only: the priority of its runs, a whole number from -1000 to 1000;
   * `enqueue`'s `priority` option overrides it per run. Among the runs
   * queued behind the task's `concurrency` or `rateLimit`, higher
   * priorities start first, each raised by its wait (`priorityAging`)
   * (docs/flow-control.md "Priorities"). @default 0
   */
  priority?: number
  /**
   * Task only: the priority points a queued run gains per second it waits
   * (above 0, at most 1000), so that newer runs of a higher priority delay
   * it for a bounded time instead of for as long as they keep coming;
   * `false` keeps strict priority order (docs/flow-control.md "Aging").
   * @default 1
   */
  priorityAging?: number | false
  /**
   * Task only: how long its finished runs are kept, in seconds from when
   * they finished, within the store's `maxRuns`; older ones are deleted
   * in the background (docs/stores.md "Retention").
   * @default 604800 (7 days) on durable stores; unlimited in memory
   */
  retention?: number
  /**
   * Task only: how long a whole run may last, in seconds from when it is
   * due, sleeps, waits and retries included; past it the run fails with
   * `DEADLINE_EXCEEDED` and is not retried (docs/tasks.md "Deadlines").
   * A trigger's `deadline` may set an earlier end. @default none
   */
  maxDuration?: number
}

/** Page render modes. Only `server` and `hybrid` render at request time. */
export type PageMode = 'static' | 'client' | 'server' | 'hybrid'

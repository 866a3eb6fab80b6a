/**
 * svc as the chaos harness runs it: server processes (svc-server.ts) on one
 * Postgres database, driven over HTTP as a client would drive them, with
 * a log of what their task bodies ran. A trigger carries an
 * `Idempotency-Key` and is sent again on a 503 or a network error, as a
 * careful client does, so a run the server accepted once is one run, and
 * "accepted" means the client got its id.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import postgres from 'postgres'

const SERVER = fileURLToPath(new URL('./svc-server.ts', import.meta.url))
export const CHAOS_SECRET = 'chaos-harness-secret-0123456789abcdef'
/** How long a server may take to listen before the harness gives up on it. */
const START_TIMEOUT_MS = 30_000
/** How long a client waits for an answer to a trigger before it gives up on that request. */
const ANSWER_TIMEOUT_MS = 10_000

export interface SvcProcess {
  readonly port: number
  readonly pid: number
  /** Everything it printed, for a failure's message. */
  output(): string
  /** `kill -9`. */
  kill(): Promise<void>
  /** SIGTERM: it drains and hands its runs over. */
  stop(): Promise<void>
}

export interface ClusterOptions {
  url: string
  effects: string
  leaseMs?: number
  pollMs?: number
}

export class Cluster {
  readonly #options: ClusterOptions
  readonly processes: SvcProcess[] = []
  readonly #children: ChildProcess[] = []

  constructor(options: ClusterOptions) {
    this.#options = options
    writeFileSync(options.effects, '')
  }

  async start(count = 1): Promise<SvcProcess[]> {
    const started = await Promise.all(Array.from({ length: count }, () => this.#spawn()))
    this.processes.push(...started)
    return started
  }

  async #spawn(): Promise<SvcProcess> {
    const { url, effects, leaseMs = 2000, pollMs = 200 } = this.#options
    const child = spawn(process.execPath, [SERVER, url, effects, String(leaseMs), String(pollMs)], {
      env: { ...process.env, SVC_TASK_SECRET: CHAOS_SECRET, NODE_ENV: 'production', SVC_DISABLE_IN_PROCESS_CRON: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    this.#children.push(child)
    let out = ''
    child.stdout!.on('data', (chunk) => (out += chunk))
    child.stderr!.on('data', (chunk) => (out += chunk))
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    const began = Date.now()
    const port = await new Promise<number>((resolve, reject) => {
      const look = setInterval(() => {
        const found = /port (\d+)/.exec(out)
        if (found) {
          clearInterval(look)
          resolve(Number(found[1]))
        } else if (child.exitCode !== null || child.signalCode !== null) {
          clearInterval(look)
          reject(new Error(`an svc server exited before it listened:\n${out}`))
        } else if (Date.now() - began > START_TIMEOUT_MS) {
          clearInterval(look)
          child.kill('SIGKILL')
          reject(new Error(`an svc server did not listen within ${START_TIMEOUT_MS} ms:\n${out}`))
        }
      }, 20)
    })
    return {
      port,
      pid: child.pid!,
      output: () => out,
      async kill() {
        child.kill('SIGKILL')
        await exited
      },
      async stop() {
        child.kill('SIGTERM')
        await exited
      },
    }
  }

  /** Kills every process still running. */
  async close(): Promise<void> {
    for (const child of this.#children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  }

  /**
   * Triggers `task` on process `on` with idempotency key `key`, sending again
   * on a 503 or a network error until `deadline` (epoch ms; one that has
   * passed already sends once). Resolves to the
   * run's id, or to undefined when the deadline passed first; `answers`
   * collects the time each answer took and its status. `headers` go with
   * each request (`Svc-Priority`).
   */
  async trigger(
    on: SvcProcess,
    task: string,
    key: string,
    deadline: number,
    answers?: Answer[],
    headers: Record<string, string> = {},
  ): Promise<string | undefined> {
    for (;;) {
      const began = performance.now()
      let status = 0
      let retryAfter: string | null = null
      try {
        const response = await fetch(`http://127.0.0.1:${on.port}/__tasks/${task}`, {
          method: 'POST',
          headers: { ...headers, authorization: `Bearer ${CHAOS_SECRET}`, 'content-type': 'application/json', 'idempotency-key': key },
          body: '{}',
          signal: AbortSignal.timeout(ANSWER_TIMEOUT_MS),
        })
        status = response.status
        retryAfter = response.headers.get('retry-after')
        const body = (await response.json()) as { id?: string; code?: string }
        answers?.push({ ms: performance.now() - began, status, code: body.code, retryAfter })
        if (status === 202 || status === 200) return body.id
        if (status !== 503) throw new Error(`POST /__tasks/${task} answered ${status}: ${JSON.stringify(body)}`)
      } catch (error) {
        if (status !== 0 && status !== 503) throw error
        if (status === 0) answers?.push({ ms: performance.now() - began, status: 0, retryAfter: null })
      }
      if (Date.now() >= deadline) return undefined
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }

  /** Every line of the effects log, split on spaces. */
  effects(): string[][] {
    return readFileSync(this.#options.effects, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => line.split(' '))
  }
}

/** One answer to a trigger: how long it took, its status (0: no answer), its error code and `Retry-After`. */
export interface Answer {
  ms: number
  status: number
  code?: string | undefined
  retryAfter: string | null
}

/** What the database holds of the runs of `task`, read with a plain connection. */
export async function runsOf(
  url: string,
  task: string,
): Promise<Map<string, { status: string; attempts: number; steps: Record<string, { output?: unknown }> }>> {
  const db = postgres(url, { onnotice: () => {}, max: 1 })
  try {
    const rows = await db<{ id: string; status: string; attempts: number; steps: Record<string, { output?: unknown }> | null }[]>`
      SELECT r.id, r.status, jsonb_array_length(coalesce(r.record->'attempts', '[]')) AS attempts,
        (SELECT jsonb_object_agg(s.key, s.record) FROM svc.steps s WHERE s.run_id = r.id) AS steps
      FROM svc.runs r WHERE r.task_name = ${task}`
    return new Map(rows.map((row) => [row.id, { status: row.status, attempts: row.attempts, steps: row.steps ?? {} }]))
  } finally {
    await db.end()
  }
}

/**
 * Recorded steps that ran again: for each run and step of chaos.steps, an
 * execution in the log after the one whose id the step recorded. An
 * execution before it is allowed (its record was never written: the
 * attempt was interrupted and ran again).
 */
export function stepsRunAgain(effects: string[][], runs: Map<string, { steps: Record<string, { output?: unknown }> }>): string[] {
  const again: string[] = []
  const byStep = new Map<string, string[]>()
  for (const [runId, step, , exec] of effects) {
    if (step === 'attempt') continue
    const key = `${runId} ${step}`
    const execs = byStep.get(key)
    if (execs) execs.push(exec)
    else byStep.set(key, [exec])
  }
  for (const [key, execs] of byStep) {
    const [runId, step] = key.split(' ')
    const recorded = runs.get(runId)?.steps[step]?.output
    if (recorded === undefined) continue
    const at = execs.indexOf(recorded as string)
    if (at >= 0 && at < execs.length - 1) again.push(`${key}: recorded ${recorded}, then ran ${execs.slice(at + 1).join(', ')}`)
  }
  return again
}

/** Attempts of chaos.flaky that ran more than once: the same run and attempt number in two executions. */
export function attemptsRunTwice(effects: string[][]): string[] {
  const seen = new Map<string, string>()
  const twice: string[] = []
  for (const [runId, what, n, pid] of effects) {
    if (what !== 'attempt') continue
    const key = `${runId} attempt ${n}`
    const before = seen.get(key)
    if (before !== undefined) twice.push(`${key}: in ${before} and ${pid}`)
    else seen.set(key, pid)
  }
  return twice
}

/** Every line of the effects log at `path`, split on spaces: the format svc-server.ts and pgboss-worker.ts write. */
export function readEffects(path: string): string[][] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split(' '))
}

/**
 * Runs of chaos.steps that process `pid` had begun and that no process
 * had taken to their last step (c) yet: what a kill of that process
 * leaves for the others.
 */
export function begunIn(effects: string[][], pid: number): number {
  const begun = new Set<string>()
  const ended = new Set<string>()
  for (const [runId, step, by] of effects) {
    if (step === 'c') ended.add(runId)
    else if (step === 'a' && by === String(pid)) begun.add(runId)
  }
  return [...begun].filter((runId) => !ended.has(runId)).length
}

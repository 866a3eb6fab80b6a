/**
 * What runs the function of each `ctx.step.run`: the function itself, or,
 * under `svcjs/testing`, a mock of it, counted. The step is recorded as any
 * other either way. Edge-safe.
 */
import type { StepApi } from '../../types.ts'

/** The step whose function is called: its key, and its run's id and task. */
export interface StepCall {
  taskName: string
  runId: string
  key: string
}

/** Runs `call`, the function of the step `step`, or what stands for it. */
export type StepCalls = (step: StepCall, call: () => unknown) => unknown

/** `api` with each `run` step's function run through `calls`, when the host has them. */
export function stepsCalledBy(api: StepApi, host: { callStep?: StepCalls }, run: { taskName: string; id: string }): StepApi {
  const calls = host.callStep
  if (calls === undefined) return api
  const stepRun: StepApi['run'] = (key, fn, opts) =>
    // A function that is none is refused by `run` itself, with its message.
    api.run(
      key,
      typeof fn === 'function'
        ? (info) => calls({ taskName: run.taskName, runId: run.id, key }, () => fn(info)) as ReturnType<typeof fn>
        : fn,
      opts,
    )
  return { ...api, run: stepRun }
}

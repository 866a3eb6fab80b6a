/**
 * `.svc/types.d.ts`: the app's tasks and events as types. It fills svc's
 * `TaskRegistry` by declaration merging, one entry per task: the input type
 * of the task module's `input` schema and the awaited return of its `POST`,
 * both read by the compiler from the module itself through a type-level
 * `import()`, so valibot, zod and arktype schemas keep their exact types
 * and nothing here parses a schema. A task started by events and without an
 * `input` schema takes the data of those events. `EventRegistry` gets one
 * entry per event of the app's `src/events.ts`, read the same way. `svc types`
 * writes it, as do `svc dev` and `svc build`.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { errorMessage } from '../runtime/errors.ts'
import type { Logger } from '../runtime/types.ts'
import { PACKAGE_NAME } from '../runtime/package-name.ts'

/** Where the file goes, relative to the app root. */
export const TASK_TYPES_FILE = '.svc/types.d.ts'

/** What the generator needs of a scanned route. */
export interface TaskTypeSource {
  kind?: string
  /** Dot-form task name; null for routes that are not tasks. */
  name?: string | null
  /** Source file relative to the app root, with `/` separators. */
  file: string
  /** The events that start the task, if any. */
  on?: readonly string[] | null
}

/** What the generator needs of the app's event schemas (`ManifestEvents`). */
export interface EventTypeSource {
  file: string
  names: readonly string[]
}

export function renderTaskTypes(routes: readonly TaskTypeSource[], events?: EventTypeSource): string {
  const tasks = taskRoutes(routes).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  const entries = tasks.map(({ name, file, on }) => {
    const module = moduleType(file)
    // Without an input schema, a task started by events takes their data.
    const fallback = on?.length ? `, ${on.map((event) => `ReceivedEventData<${JSON.stringify(event)}>`).join(' | ')}` : ''
    return `    ${JSON.stringify(name)}: {\n      input: TaskModuleInput<${module}${fallback}>\n      result: TaskModuleResult<${module}>\n    }\n`
  })
  const eventsModule = events && moduleType(events.file)
  const eventEntries = (events?.names ?? []).map((name) => {
    const args = `${eventsModule}, ${JSON.stringify(name)}`
    return `    ${JSON.stringify(name)}: {\n      data: EventModuleData<${args}>\n      received: EventModuleReceived<${args}>\n    }\n`
  })
  const imported = ['TaskModuleInput', 'TaskModuleResult']
  if (tasks.some((task) => task.on?.length)) imported.push('ReceivedEventData')
  if (eventEntries.length > 0) imported.push('EventModuleData', 'EventModuleReceived')
  return (
    '// Written by svc from the task routes in src/api and the event schemas in src/events.ts;\n' +
    '// `svc types`, `svc dev` and `svc build` write it again, so edits here do not last. Add it\n' +
    "// to the tsconfig's include to type enqueue(), ctx.step.enqueue and ctx.step.waitForTask by\n" +
    '// task name, and sendEvent() and ctx.step.waitForEvent by event name.\n' +
    `import type { ${imported.join(', ')} } from '${PACKAGE_NAME}'\n\n` +
    `declare module '${PACKAGE_NAME}' {\n` +
    `  interface TaskRegistry {\n${entries.join('')}  }\n` +
    (eventEntries.length > 0 ? `  interface EventRegistry {\n${eventEntries.join('')}  }\n` : '') +
    '}\n'
  )
}

/** The type of the module at `file`; the types file sits in .svc/, one level below the root the paths start from. */
function moduleType(file: string): string {
  return `typeof import(${JSON.stringify(`../${file}`)})`
}

/**
 * Writes `.svc/types.d.ts` under `root` for these routes, and only when its
 * text changes, so an editor's type checker is not woken for nothing.
 * Returns the file's path, whether it was written and how many tasks it lists.
 */
export function writeTaskTypes(
  root: string,
  routes: readonly TaskTypeSource[],
  events?: EventTypeSource,
): { path: string; written: boolean; tasks: number } {
  const path = join(root, TASK_TYPES_FILE)
  const text = renderTaskTypes(routes, events)
  const tasks = taskRoutes(routes).length
  let current: string | undefined
  try {
    current = readFileSync(path, 'utf8')
  } catch {
    // No file yet: write it.
  }
  if (current === text) return { path, written: false, tasks }
  mkdirSync(join(root, '.svc'), { recursive: true })
  writeFileSync(path, text)
  return { path, written: true, tasks }
}

/**
 * `writeTaskTypes` for `svc dev`, on start and after every change: a failure
 * to write is logged and the server goes on.
 */
export function refreshTaskTypes(
  root: string,
  routes: readonly TaskTypeSource[],
  events: EventTypeSource | undefined,
  logger: Logger,
): void {
  try {
    writeTaskTypes(root, routes, events)
  } catch (error) {
    logger.error(`[svc] could not write ${TASK_TYPES_FILE}: ${errorMessage(error)}`)
  }
}

function taskRoutes(routes: readonly TaskTypeSource[]): (TaskTypeSource & { name: string })[] {
  return routes.filter((route): route is TaskTypeSource & { name: string } => route.kind === 'task' && typeof route.name === 'string')
}

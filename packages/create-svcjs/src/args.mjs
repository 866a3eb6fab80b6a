import { parseArgs } from 'node:util'
import { TEMPLATES } from './templates.mjs'

/** A mistake on the command line: printed without a stack, with the usage hint. */
export class UsageError extends Error {
  name = 'UsageError'
}

/**
 * @typedef {object} CreateArgs
 * @property {boolean} help
 * @property {string} dir The directory to create, as given.
 * @property {keyof typeof TEMPLATES} template
 * @property {string | undefined} svcVersion The dependency spec for svc, when not the default.
 * @property {boolean} force
 */

export const DEFAULT_DIR = 'svc-app'

/** @param {string} version */
export function usage(version) {
  const width = Math.max(...Object.keys(TEMPLATES).map((name) => name.length))
  const templates = Object.entries(TEMPLATES).map(([name, { summary }]) => `  ${name.padEnd(width)}  ${summary}`)
  return [
    `Create an svc app (create-svcjs v${version})`,
    '',
    'Usage: npm create svcjs@latest [dir] -- [options]',
    `       create-svcjs [dir] [options]      (dir defaults to ${DEFAULT_DIR})`,
    '',
    'Options:',
    '  -t, --template <name>  the app to start from (default: basic)',
    '  --svc-version <spec>   the svc dependency to write (default: ^<this version>)',
    '  -f, --force            write into a directory that is not empty, over files of the same name',
    '  -h, --help             show this help',
    '',
    'Templates:',
    ...templates,
    '',
  ].join('\n')
}

/**
 * Reads the command line. Asks nothing: every choice is a flag with a default.
 * @param {string[]} argv
 * @returns {CreateArgs}
 */
export function parseCreateArgs(argv) {
  let parsed
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        template: { type: 'string', short: 't', default: 'basic' },
        'svc-version': { type: 'string' },
        force: { type: 'boolean', short: 'f', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    })
  } catch (error) {
    // parseArgs explains how to pass a positional that starts with '-', which is not what went wrong here.
    const message = /** @type {Error} */ (error).message
    const unknown = message.match(/^Unknown option '([^']+)'/)
    throw new UsageError(unknown ? `Unknown option ${unknown[1]}` : message)
  }
  const { values, positionals } = parsed
  if (positionals.length > 1) throw new UsageError(`Name one directory (got ${positionals.map((p) => JSON.stringify(p)).join(', ')})`)
  const template = /** @type {string} */ (values.template)
  if (!Object.hasOwn(TEMPLATES, template)) {
    throw new UsageError(`Unknown template "${template}": choose one of ${Object.keys(TEMPLATES).join(', ')}`)
  }
  const svcVersion = values['svc-version']
  if (svcVersion !== undefined && svcVersion.trim() === '') throw new UsageError('--svc-version needs a version or a path (got "")')
  return {
    help: Boolean(values.help),
    dir: positionals[0] ?? DEFAULT_DIR,
    template: /** @type {keyof typeof TEMPLATES} */ (template),
    svcVersion,
    force: Boolean(values.force),
  }
}

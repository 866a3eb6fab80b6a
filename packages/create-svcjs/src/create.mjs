import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { basename, dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { appReadme } from './readme.mjs'
import { appPackage, TEMPLATES } from './templates.mjs'

const TEMPLATES_DIR = fileURLToPath(new URL('../templates/', import.meta.url))

/**
 * npm leaves dot files out of a package (.gitignore) or reads them as its own
 * (.npmrc), so the templates hold them under a leading underscore.
 */
const RENAMED = { _gitignore: '.gitignore' }

/** What a directory may hold and still count as empty: a fresh `git init` leaves `.git`. */
const IGNORED = new Set(['.git'])

/** A problem with what the user asked for: printed as is, without a stack. */
export class CreateError extends Error {
  name = 'CreateError'
}

/** This package's version; apps depend on the svc released with it. */
export const VERSION = /** @type {{ version: string }} */ (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')))
  .version

/**
 * @typedef {object} CreateOptions
 * @property {string} dir Where to create the app, relative to `cwd`.
 * @property {keyof typeof TEMPLATES} template
 * @property {string} [svcVersion] The svc dependency spec. Default: `^` this package's version.
 * @property {boolean} [force] Write into a directory that is not empty.
 * @property {string} [cwd] Default: `process.cwd()`.
 * @property {'npm' | 'pnpm' | 'yarn' | 'bun'} [packageManager] Whose commands the README shows. Default: npm.
 */

/**
 * Writes a new app from a template.
 * @param {CreateOptions} options
 * @returns {{ root: string, name: string, files: string[] }} The app's directory, its package name and the files written.
 */
export function createApp({ dir, template: templateName, svcVersion, force = false, cwd = process.cwd(), packageManager = 'npm' }) {
  const template = TEMPLATES[templateName]
  if (!template) throw new CreateError(`Unknown template "${templateName}": choose one of ${Object.keys(TEMPLATES).join(', ')}`)
  const root = resolve(cwd, dir)
  if (existsSync(root)) {
    if (!statSync(root).isDirectory()) throw new CreateError(`${dir} is a file; name a new directory for the app`)
    const entries = readdirSync(root).filter((entry) => !IGNORED.has(entry))
    if (entries.length > 0 && !force) {
      throw new CreateError(
        `${dir} is not empty (${entries.length} ${entries.length === 1 ? 'entry' : 'entries'}). ` +
          'Name a new directory, or pass --force to write the template over it (files of the same name are replaced, others are kept).',
      )
    }
  }

  const name = packageName(basename(root))
  /** @type {Map<string, string>} */
  const files = new Map()
  for (const layer of template.layers) {
    const from = join(TEMPLATES_DIR, layer)
    for (const file of listFiles(from)) {
      const target = join(dirname(file), RENAMED[/** @type {keyof typeof RENAMED} */ (basename(file))] ?? basename(file))
      files.set(target, readFileSync(join(from, file), 'utf8'))
    }
  }
  const pkg = appPackage(template, { name, svcSpec: svcVersion === undefined ? `^${VERSION}` : dependencySpec(svcVersion, cwd) })
  files.set('package.json', `${JSON.stringify(pkg, null, 2)}\n`)
  files.set('README.md', appReadme(template, { name, templateName, ...commandsOf(packageManager) }))

  for (const [file, contents] of files) {
    const path = join(root, file)
    mkdirSync(dirname(path), { recursive: true })
    writeFileSync(path, contents)
  }
  return { root, name, files: [...files.keys()].sort() }
}

/**
 * Every file under `dir`, as paths relative to it.
 * @param {string} dir
 */
function listFiles(dir) {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)))
}

/**
 * A path given on the command line is relative to where the command ran, but
 * npm reads a dependency's path from the app's folder: it is written out as an
 * absolute `file:` spec. Anything else (a range, a tag, a URL) is kept as is.
 * @param {string} spec
 * @param {string} cwd
 */
function dependencySpec(spec, cwd) {
  return /^(\.{1,2}[\\/]|[\\/]|[a-zA-Z]:[\\/])/.test(spec) ? `file:${resolve(cwd, spec)}` : spec
}

/**
 * A valid npm package name from a directory name (lower case, no spaces).
 * @param {string} base
 */
export function packageName(base) {
  return (
    base
      .toLowerCase()
      .replace(/[^a-z0-9._~-]+/g, '-')
      .replace(/^[-._]+|-+$/g, '') || 'svc-app'
  )
}

/**
 * How the package manager that ran us installs and runs scripts.
 * @param {'npm' | 'pnpm' | 'yarn' | 'bun'} pm
 */
export function commandsOf(pm) {
  return {
    install: `${pm} install`,
    /** @param {string} script */
    run: (script) => {
      // `bun test` and `bun build` are bun's own commands, not the scripts of that name.
      if (pm === 'bun') return `bun run ${script}`
      if (pm !== 'npm') return `${pm} ${script}`
      return script === 'test' || script === 'start' ? `npm ${script}` : `npm run ${script}`
    },
  }
}

/**
 * The package manager a user ran `create svcjs` with, from the user agent npm,
 * pnpm, yarn and bun all set for the commands they start.
 * @param {string | undefined} userAgent `npm_config_user_agent`
 * @returns {'npm' | 'pnpm' | 'yarn' | 'bun'}
 */
export function packageManagerOf(userAgent) {
  const name = userAgent?.split('/')[0]
  return name === 'pnpm' || name === 'yarn' || name === 'bun' ? name : 'npm'
}

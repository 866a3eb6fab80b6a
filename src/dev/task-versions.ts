/**
 * The version of each task `svc dev` serves (`RuntimeApiRoute.version`,
 * docs/deploying.md "Runs across deploys"). The dev server has no module graph at hand, so the
 * version is conservative: a digest of the task's file and of every helper
 * (each importable file under src/ that is no route or page module). A change
 * to the task changes its version; a change to any helper changes every
 * task's, since any of them may import it.
 */
import { createHash } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { join, sep } from 'node:path'

/** Hex characters of the sha256 a version keeps, as in `svc build`. */
export const VERSION_LENGTH = 12

/** Files a module may import: scripts, TypeScript and JSON. Declaration files hold no code. */
const IMPORTABLE = /\.(?:[cm]?[jt]sx?|json)$/
const DECLARATION = /\.d\.[cm]?ts$/

/** The sha256 of a file's bytes, as hex: what tells one content of a file from another. */
export function contentHash(source: Uint8Array): string {
  return createHash('sha256').update(source).digest('hex')
}

/**
 * sha256 over the helpers of the app at `root`, by path: every importable
 * file under `src/` that is not one of `modules` (route and page files,
 * relative to the root). Each file is read once.
 */
export function helpersDigest(root: string, modules: ReadonlySet<string>): string {
  const src = join(root, 'src')
  let entries: string[]
  try {
    entries = readdirSync(src, { recursive: true, encoding: 'utf8' })
  } catch {
    entries = [] // no src/ yet
  }
  const helpers = entries
    .map((entry) => `src/${entry.split(sep).join('/')}`)
    .filter((file) => IMPORTABLE.test(file) && !DECLARATION.test(file) && !modules.has(file) && !hidden(file))
    .sort()
  const hash = createHash('sha256')
  for (const file of helpers) {
    let source: Buffer
    try {
      source = readFileSync(join(root, file))
    } catch {
      continue // a folder named like a file, or deleted since the listing
    }
    // The length keeps one file's bytes from passing for the next file's name.
    hash.update(`${file}\0${source.length}\0`).update(source)
  }
  return hash.digest('hex')
}

/** The version of the task in `file` (relative to the root), whose content hashes to `hash`, next to helpers digesting to `helpers`. */
export function taskVersion(file: string, hash: string, helpers: string): string {
  return createHash('sha256').update(`${file}\0${hash}\0${helpers}`).digest('hex').slice(0, VERSION_LENGTH)
}

/** A file in `node_modules` or a dot folder (an editor's or a tool's) is no helper of the app. */
function hidden(file: string): boolean {
  return file.split('/').some((part) => part === 'node_modules' || (part.startsWith('.') && part.length > 1))
}

/**
 * Lists the source files of a routes folder. Files and folders whose name
 * starts with `_` are private helpers and are not descended into.
 */
import { readdir } from 'node:fs/promises'
import { isSourceFile } from './paths.ts'

/**
 * Paths relative to `dir`, with `/` separators. A missing folder gives an
 * empty list: an app may have API routes and no pages, or the reverse.
 */
export async function listSourceFiles(dir: string): Promise<string[]> {
  const out: string[] = []
  await walk(dir, '', out)
  return out.sort()
}

async function walk(dir: string, prefix: string, out: string[]): Promise<void> {
  let entries
  try {
    entries = await readdir(dir, { withFileTypes: true })
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' && prefix === '') return
    throw error
  }
  const nested: Promise<void>[] = []
  for (const entry of entries) {
    if (entry.name.startsWith('_') || entry.name.startsWith('.')) continue
    if (entry.isDirectory()) {
      if (entry.name === 'node_modules') continue
      nested.push(walk(`${dir}/${entry.name}`, `${prefix}${entry.name}/`, out))
    } else if (entry.isFile() && isSourceFile(entry.name)) {
      out.push(prefix + entry.name)
    }
  }
  await Promise.all(nested)
}

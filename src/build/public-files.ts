import { readdir } from 'node:fs/promises'
import { join, relative, sep } from 'node:path'

/** How many file names a warning lists before it counts the rest. */
const NAMED = 5

/** Every file under `<root>/public`, relative to it with `/` separators and sorted; none when the folder is missing. */
export async function publicFiles(root: string): Promise<string[]> {
  const dir = join(root, 'public')
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => [])
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)).split(sep).join('/'))
    .sort()
}

/** `a, b, c, d, e and 2 more`: enough names to recognize the files without flooding the build output. */
export function nameSome(names: string[]): string {
  const shown = names.slice(0, NAMED).join(', ')
  return names.length > NAMED ? `${shown} and ${names.length - NAMED} more` : shown
}

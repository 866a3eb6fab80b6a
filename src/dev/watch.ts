import { watch, type FSWatcher } from 'node:fs'

export interface Watcher {
  close(): void
}

/**
 * Calls `onChange` with the changed paths (relative to `dir`) once a burst
 * of file events has been quiet for `debounceMs`: editors write a file in
 * several steps, and a save of many files should cost one reload.
 */
export function watchTree(dir: string, onChange: (files: string[]) => void, debounceMs = 60): Watcher {
  const pending = new Set<string>()
  let timer: ReturnType<typeof setTimeout> | undefined
  // Recursive fs.watch is native on Linux since Node 20 (inotify per directory).
  const watcher: FSWatcher = watch(dir, { recursive: true }, (_event, file) => {
    if (!file) return
    pending.add(String(file).replaceAll('\\', '/'))
    clearTimeout(timer)
    timer = setTimeout(() => {
      const files = [...pending]
      pending.clear()
      onChange(files)
    }, debounceMs)
  })
  return {
    close() {
      clearTimeout(timer)
      watcher.close()
    },
  }
}

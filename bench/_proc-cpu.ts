/** CPU time from Linux's /proc/<pid>/stat, for benchmarks that report what a process used. */
import { readFileSync } from 'node:fs'

/** USER_HZ: the unit of the times in /proc/<pid>/stat. */
const TICKS_PER_SECOND = 100

export interface ProcCpu {
  /** user + system seconds of the process itself. */
  self: number
  /** user + system seconds of the children it has waited for. */
  children: number
}

/** The CPU fields of a /proc/<pid>/stat line: utime, stime, cutime and cstime (fields 14–17 of proc(5)). */
export function parseProcCpu(stat: string): ProcCpu {
  // The command name (field 2) may hold spaces; the fields after it start at field 3.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  const [utime, stime, cutime, cstime] = fields.slice(11, 15).map(Number)
  return { self: (utime + stime) / TICKS_PER_SECOND, children: (cutime + cstime) / TICKS_PER_SECOND }
}

/** The CPU of a process (`self` for this one); undefined where /proc is missing (not Linux). */
export function procCpu(pid: number | 'self'): ProcCpu | undefined {
  try {
    return parseProcCpu(readFileSync(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return undefined
  }
}

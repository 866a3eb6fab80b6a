/**
 * svc's tables in a namespace of their own (docs/security.md "Namespaces"):
 * on SQLite every table and index svc makes is named `svc_…`, so that an
 * app keeping its own tables in the same database (`ctx.step.transaction`
 * invites it to) can have an `events` or a `runs` table of its own.
 *
 * Releases before schema version 12 of `SqliteRunStore`'s files, and
 * Durable Objects of those releases, named them plainly. `prefixTables`
 * renames such tables in place, rows and all, and gives their indexes the
 * prefix too. Edge-safe: no `node:` import.
 */
import { read, type SqlProcedure, write } from './procedure.ts'

/** What svc's table and index names begin with. */
export const TABLE_PREFIX = 'svc_'

/**
 * Renames each of `plain` (svc's tables as an earlier release named them)
 * that the database holds, and whose prefixed name it does not, to its
 * prefixed name, and recreates the indexes of the renamed tables under
 * prefixed names. SQLite has no rename for an index; the recreated one
 * holds what the old one did. Only the names the caller lists move: a
 * table of the app's is never touched. Returns the tables it renamed.
 * Run inside the caller's transaction, so a crash leaves either every name
 * or none moved.
 */
export function* prefixTables(plain: readonly string[]): SqlProcedure<string[]> {
  const rows = yield read(`SELECT name FROM sqlite_master WHERE type = 'table'`)
  const held = new Set(rows.map((row) => String(row.name)))
  const moved = plain.filter((name) => held.has(name) && !held.has(TABLE_PREFIX + name))
  for (const name of moved) yield write(`ALTER TABLE "${name}" RENAME TO "${TABLE_PREFIX}${name}"`)
  if (moved.length === 0) return moved
  const indexes = yield read(
    `SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL AND tbl_name IN (${moved.map(() => '?').join(', ')})`,
    ...moved.map((name) => TABLE_PREFIX + name),
  )
  for (const { name, sql } of indexes as { name: string; sql: string }[]) {
    if (name.startsWith(TABLE_PREFIX)) continue
    yield write(`DROP INDEX "${name}"`)
    // SQLite keeps an index's statement as `CREATE [UNIQUE] INDEX <name> ON …`
    // (without IF NOT EXISTS), so the first occurrence of the name is the name.
    yield write(sql.replace(name, TABLE_PREFIX + name))
  }
  return moved
}

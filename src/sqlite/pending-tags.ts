/**
 * The tag rows of the runs a `SqliteRunStore` inserts (search.ts), kept
 * until the batch that inserts them commits, and written then, right
 * before its COMMIT, in the same transaction: a statement for each 64 rows
 * rather than one for each run, and no savepoint around the insert of a
 * tagged run, which stays one statement. A write undone to its savepoint
 * takes back the rows it added; a batch rolled back, all of them.
 */
import type { StatementSync } from 'node:sqlite'
import { pushTagRows, tagRowStatements } from '../runtime/tasks/sql/search.ts'

export class PendingTags {
  /** Pairs of tag and run seq. */
  #params: (string | number)[] = []
  /** Their count when the write running now took its savepoint. */
  #mark = 0

  add(tags: readonly unknown[] | undefined, seq: number): void {
    pushTagRows(tags, seq, this.#params)
  }

  /** A write takes its savepoint: what it adds from here may be undone. */
  savepoint(): void {
    this.#mark = this.#params.length
  }

  /** The write was undone to its savepoint. */
  undo(): void {
    this.#params.length = this.#mark
  }

  /** The batch was rolled back. */
  clear(): void {
    this.#params = []
    this.#mark = 0
  }

  /** Writes the rows, inside the batch about to commit. */
  write(sql: (text: string) => StatementSync): void {
    if (this.#params.length === 0) return
    for (const statement of tagRowStatements(this.#params)) sql(statement.text).run(...statement.params)
    this.clear()
  }
}

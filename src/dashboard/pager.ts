/**
 * A list the admin surface hands out newest first, a page at a time behind
 * a cursor (runs, events): shown with "Load more", refreshed in place, and
 * started over when a filter changes.
 */
import { type Child, fill, h } from './dom.ts'
import { errorView } from './tasks.ts'

/** One page as an endpoint answers it. */
export interface Slice<T> {
  items: T[]
  cursor?: string
}

export interface PagedListOptions<T extends { id: string }> {
  /** Rows the list starts with, and rows each "Load more" adds. */
  page: number
  /** The largest `limit` the endpoint takes. */
  maxLimit: number
  /** One page of at most `limit` rows after `cursor` (from the newest without it), under the filters set now. */
  fetch(limit: number, cursor?: string): Promise<Slice<T>>
  /** The rows, each a `tr` whose `attribute` holds its id. */
  render(rows: T[]): Child
  /** The attribute of a row that holds its id, such as `data-run`. */
  attribute: string
}

export interface PagedList {
  /** The rows and the "Load more" button. */
  element: HTMLElement
  refresh(): Promise<void>
  /** Drops the rows and loads the first page again: the filters changed. */
  restart(): void
}

export function pagedList<T extends { id: string }>(options: PagedListOptions<T>): PagedList {
  const body = h('div', { class: 'runs' })
  const more = h('button', { type: 'button', class: 'more', hidden: true }, 'Load more')
  let rows: T[] = []
  let cursor: string | undefined
  // A filter change starts a new generation: answers to an older one are dropped.
  let generation = 0
  // Loads run one after another, so a refresh and a "Load more" never interleave.
  let queue = Promise.resolve()
  let refreshQueued: Promise<void> | undefined

  /** `count` rows after `after`, asked for in pages as large as the API allows. */
  async function fetchRows(count: number, after?: string): Promise<Slice<T>> {
    const items: T[] = []
    let next = after
    do {
      const page = await options.fetch(Math.min(count - items.length, options.maxLimit), next)
      items.push(...page.items)
      next = page.cursor
    } while (next && items.length < count)
    return { items, cursor: next }
  }

  function show(error?: unknown): void {
    const alert = error === undefined ? null : h('div', { role: 'alert' }, errorView(error))
    fill(body, alert && rows.length === 0 ? null : options.render(rows), alert)
    more.hidden = cursor === undefined
  }

  /** Runs `load` in turn; its slice replaces (or extends) the rows unless a filter changed meanwhile. */
  function enqueue(load: () => Promise<Slice<T>>, extend: boolean): Promise<void> {
    const run = async () => {
      const at = generation
      try {
        const slice = await load()
        if (at !== generation) return
        const focused = document.activeElement === more
        rows = unique(extend ? [...rows, ...slice.items] : slice.items)
        cursor = slice.cursor
        show()
        // The last page hides the button: keyboard focus moves on to the first row it added.
        if (focused && more.hidden && slice.items[0])
          body.querySelector<HTMLElement>(`tr[${options.attribute}="${CSS.escape(slice.items[0].id)}"] a`)?.focus()
      } catch (error) {
        if (at === generation) show(error)
      }
    }
    queue = queue.then(run)
    return queue
  }

  // A refresh asks again for as many rows as are shown (at least a page), not
  // only the first page: older pages kept as they were would show stale
  // statuses, keep rows that left the filter, and leave a gap once more than
  // a page of new rows arrived. Asked again, the rows stay one consecutive
  // slice of the list and the cursor continues right after them; rows that
  // new ones push past the end come back with "Load more".
  const refresh = (): Promise<void> => {
    refreshQueued ??= enqueue(() => {
      refreshQueued = undefined
      return fetchRows(Math.max(options.page, rows.length))
    }, false)
    return refreshQueued
  }

  // The button shows only while there is a cursor; a filter change that clears it meanwhile makes this a first page, which `unique` merges.
  more.addEventListener('click', () => void enqueue(() => fetchRows(options.page, cursor), true))

  return {
    element: h('div', null, body, more),
    refresh,
    restart() {
      generation++
      rows = []
      cursor = undefined
      refreshQueued = undefined
      void refresh()
    },
  }
}

/** Each row once, where it first appears: a row may reach two pages when the list moves between them. */
function unique<T extends { id: string }>(rows: T[]): T[] {
  const seen = new Set<string>()
  return rows.filter((row) => !seen.has(row.id) && seen.add(row.id))
}

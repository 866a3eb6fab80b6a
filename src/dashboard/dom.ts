/** A small `h()` that builds real DOM nodes: the page is a few tables and forms, which need no virtual DOM. */

export type Child = Node | string | number | null | undefined | false | Child[]
type Props = Record<string, unknown> | null

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, props?: Props, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag)
  for (const [name, value] of Object.entries(props ?? {})) {
    if (value === undefined || value === null || value === false) continue
    if (name.startsWith('on') && typeof value === 'function') el.addEventListener(name.slice(2), value as EventListener)
    else if (name === 'value') (el as HTMLInputElement).value = String(value)
    else el.setAttribute(name, value === true ? '' : String(value))
  }
  append(el, children)
  return el
}

function append(parent: Node, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue
    if (Array.isArray(child)) append(parent, child)
    else parent.appendChild(typeof child === 'object' ? child : document.createTextNode(String(child)))
  }
}

/** A table with a header cell per column, which is how assistive technology names each cell. */
export function dataTable(columns: string[], rows: Child[], props?: Props): HTMLTableElement {
  return h(
    'table',
    props,
    h(
      'thead',
      null,
      h(
        'tr',
        null,
        columns.map((name) => h('th', { scope: 'col' }, name)),
      ),
    ),
    h('tbody', null, rows),
  )
}

/**
 * Replaces what `parent` holds. A field being typed in that is put back
 * (the forms of a run's panel are kept across its redraws) keeps its focus
 * and its caret: taken out, it would lose them, and the keys typed next
 * would go nowhere.
 */
export function fill(parent: Element, ...children: Child[]): void {
  const active = document.activeElement
  const typing = (active instanceof HTMLInputElement || active instanceof HTMLTextAreaElement) && parent.contains(active) ? active : null
  const start = typing?.selectionStart ?? null
  const end = typing?.selectionEnd ?? null
  parent.replaceChildren()
  append(parent, children)
  if (typing === null || !typing.isConnected || document.activeElement === typing) return
  typing.focus()
  // Only text fields have a caret to put back.
  if (start !== null && end !== null) typing.setSelectionRange(start, end)
}

/** A local time (with the date unless it is today), the ISO timestamp as its tooltip. */
export function time(iso: string | null | undefined): Child {
  if (!iso) return h('span', { class: 'muted' }, '—')
  const date = new Date(iso)
  const today = date.toDateString() === new Date().toDateString()
  return h('time', { datetime: iso, title: iso }, today ? date.toLocaleTimeString() : date.toLocaleString())
}

/** Milliseconds as people read them: `850 ms`, `1.5 s`, `30 s`, `2 min`, `1.5 h`. */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`
  if (ms < 60_000) return `${Number((ms / 1000).toFixed(1))} s`
  if (ms < 3_600_000) return `${Number((ms / 60_000).toFixed(1))} min`
  return `${Number((ms / 3_600_000).toFixed(1))} h`
}

export function statusBadge(status: string): HTMLElement {
  return h('span', { class: `status s-${status}` }, status)
}

/** A run's tags as small chips, or nothing when it has none. */
export function tagChips(tags: readonly string[] | undefined): Child {
  return tags?.length
    ? h(
        'span',
        { class: 'tags' },
        tags.map((tag) => h('span', { class: 'tag' }, tag)),
      )
    : null
}

/** A link handler that runs `fn` instead of following the link. */
export function click(fn: () => void): (event: Event) => void {
  return (event) => {
    event.preventDefault()
    fn()
  }
}

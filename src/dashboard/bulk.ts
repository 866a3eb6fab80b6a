/**
 * The bar above the Runs table, shown while a filter is set: "Cancel
 * matching" and "Replay matching" act on every run the filters find
 * (`POST /__tasks/runs/cancel` and `/replay`). A dry run counts them
 * first and the user confirms the count; then the real call goes page
 * after page, at most `MAX_PAGES` of them, and the bar reports what each
 * run became.
 */
import type { BulkAction, BulkResult } from '../runtime/admin/bulk-runs.ts'
import { api } from './api.ts'
import { fill, h } from './dom.ts'
import type { RunFilter } from './filters.ts'
import { errorView } from './tasks.ts'

/** Runs per call: the most the endpoint takes. */
const PAGE = 1000
/** Calls one click makes at most; the bar says when more runs remain. */
const MAX_PAGES = 10

export interface BulkBar {
  element: HTMLElement
  /** Shows the bar while a filter is set, and hides it otherwise. */
  update(): void
}

interface Filters {
  read(): RunFilter
  any(): boolean
}

const VERB = { cancel: ['Cancel', 'Cancelled', 'cancelled'], replay: ['Replay', 'Replayed', 'replayed'] } as const

export function bulkBar(filters: Filters, done: () => void): BulkBar {
  const report = h('p', { role: 'status', class: 'muted bulk-report' })
  // Hidden while empty, so that the runs list's own alert is the one on screen.
  const problems = h('div', { role: 'alert', class: 'problems', hidden: true })
  const clear = () => {
    fill(report)
    fill(problems)
    problems.hidden = true
  }
  const fail = (error: unknown) => {
    fill(problems, errorView(error))
    problems.hidden = false
  }
  const buttons = (['cancel', 'replay'] as const).map((action) =>
    h(
      'button',
      { type: 'button', class: action === 'cancel' ? 'small danger' : 'small', onclick: () => void act(action) },
      `${VERB[action][0]} matching`,
    ),
  )
  const element = h('div', { class: 'bulk', hidden: true }, h('div', { class: 'actions' }, buttons), report, problems)

  async function act(action: BulkAction): Promise<void> {
    clear()
    let filter: RunFilter
    try {
      filter = filters.read()
    } catch (error) {
      fail(error)
      return
    }
    const path = `/__tasks/runs/${action}`
    const counts = { cancelled: 0, replayed: 0, skipped: 0, failed: 0 }
    let firstFailure: string | undefined
    let cursor: string | undefined
    let acted = false
    for (const button of buttons) button.disabled = true
    try {
      const dry = await api<BulkResult>('POST', path, { filter, dryRun: true, limit: PAGE })
      if (dry.matched === 0) {
        fill(report, `No runs match the filters: nothing to ${action}.`)
        return
      }
      if (!confirm(question(action, dry))) return
      acted = true
      let pages = 0
      do {
        const page = await api<BulkResult>('POST', path, cursor ? { filter, limit: PAGE, cursor } : { filter, limit: PAGE })
        for (const run of page.runs) {
          counts[run.outcome ?? 'skipped']++
          if (run.outcome === 'failed') firstFailure ??= run.error
        }
        cursor = page.cursor
      } while (cursor && ++pages < MAX_PAGES)
    } catch (error) {
      fail(error)
    } finally {
      for (const button of buttons) button.disabled = false
      if (acted) {
        fill(report, summary(action, counts, cursor !== undefined, firstFailure))
        done()
      }
    }
  }

  return {
    element,
    update() {
      element.hidden = !filters.any()
      if (element.hidden) clear()
    },
  }
}

/** "Cancel 12 runs?", or what happens when more than a page matches. */
function question(action: BulkAction, dry: BulkResult): string {
  const verb = VERB[action][0]
  if (dry.cursor === undefined) return `${verb} ${runs(dry.matched)}?`
  return `${verb} more than ${runs(dry.matched)}? One go acts on at most ${number(PAGE * MAX_PAGES)}; press again for the rest.`
}

function summary(action: BulkAction, counts: Record<string, number>, more: boolean, firstFailure: string | undefined): string {
  const done = `${VERB[action][1]} ${runs(counts[VERB[action][2]])}; ${number(counts.skipped)} skipped, ${number(counts.failed)} failed.`
  const failure = firstFailure ? ` First failure: ${firstFailure}` : ''
  const rest = more ? ` More runs match: press "${VERB[action][0]} matching" again for the rest.` : ''
  return done + failure + rest
}

function runs(n: number): string {
  return `${number(n)} run${n === 1 ? '' : 's'}`
}

function number(n: number): string {
  return n.toLocaleString('en-US')
}

/**
 * Charts drawn as one SVG string and inserted at once: a run of thousands of
 * steps costs one parse and one layout, not a DOM call per mark. The page's
 * CSP allows no style attributes, so marks take their colours from classes.
 */
import { h } from './dom.ts'

/** Text and attribute values inside markup (the five characters XML reserves). */
export function esc(value: string | number): string {
  return String(value).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}

/** ` name="value"` for each attribute that has a value. */
export function attrs(record: Record<string, string | number | undefined>): string {
  let out = ''
  for (const [name, value] of Object.entries(record)) if (value !== undefined) out += ` ${name}="${esc(value)}"`
  return out
}

/** Pixels, rounded to what a screen shows, so that a long SVG string stays short. */
export function px(value: number): number {
  return Math.round(value * 100) / 100
}

export interface SvgBox {
  element: HTMLElement
  /** Draws `render(width)` into the box now (or once it has a width), and again whenever its width changes. */
  draw(render: (width: number) => string): void
}

/**
 * A box whose markup is drawn at the box's own width in pixels, so text keeps
 * its size and a bar's width reads as a duration. A `.scroll` inside keeps
 * its scroll position across redraws, which live updates make often.
 */
export function svgBox(props: Record<string, unknown>): SvgBox {
  const element = h('div', props)
  let render: ((width: number) => string) | undefined
  let width = 0
  const paint = () => {
    if (!render) return
    const top = element.querySelector('.scroll')?.scrollTop ?? 0
    element.innerHTML = render(width)
    const scroll = element.querySelector('.scroll')
    if (scroll && top) scroll.scrollTop = top
  }
  new ResizeObserver(([entry]) => {
    const next = Math.floor(entry.contentRect.width)
    // A box taken out of the page measures 0: it keeps what it shows until it is back.
    if (next === 0 || next === width) return
    width = next
    paint()
  }).observe(element)
  return {
    element,
    draw(next) {
      render = next
      if (width > 0) paint()
    },
  }
}

/** Steps between time ticks that read well: 1, 2, 5 and 10 of each unit, then minutes and hours. */
const TIME_STEPS = [
  1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 10e3, 15e3, 30e3, 60e3, 120e3, 300e3, 600e3, 900e3, 1800e3, 3600e3, 7200e3, 10800e3,
  21600e3, 43200e3, 86400e3,
]

/** A tick step (ms) that cuts `span` ms into at most `count` parts. */
export function timeStep(span: number, count: number): number {
  const limit = span / Math.max(count, 1)
  return TIME_STEPS.find((step) => step >= limit) ?? Math.ceil(limit / 86400e3) * 86400e3
}

/** A step of 1, 2 or 5 times a power of ten that cuts `max` into at most `count` parts. */
export function countStep(max: number, count: number): number {
  const limit = Math.max(max / Math.max(count, 1), 1)
  const power = 10 ** Math.floor(Math.log10(limit))
  return [1, 2, 5, 10].map((n) => n * power).find((step) => step >= limit)!
}

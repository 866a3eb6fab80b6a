/**
 * Reading `text/event-stream` as it arrives (WHATWG HTML, "Event stream
 * interpretation"), however the bytes are split: any line ending, data
 * lines joined, comments and unknown fields passed over, an event's type
 * for that event alone, the last event id kept.
 */
import { describe, expect, it } from 'vitest'
import { EventStreamReader, type StreamEvent } from '../../src/client/event-stream.ts'

/** Every event of `text`, fed in pieces of `size` characters. */
function read(text: string, size: number): { data: string; id: string; event: string }[] {
  const reader = new EventStreamReader()
  const events = []
  for (let at = 0; at < text.length; at += size) events.push(...reader.push(text.slice(at, at + size)))
  return events
}

describe('EventStreamReader', () => {
  const stream =
    ': subscribed\r\n\r\ndata: {"a":1}\r\rdata:two\ndata: lines\n\nevent: x\nretry: 10\nid: done\ndata: last\n\ndata: unfinished'

  it.each([1, 2, 3, 7, stream.length])('finds the same events in pieces of %i characters, with CR, LF or CRLF line ends', (size) => {
    expect(read(stream, size)).toEqual([
      { data: '{"a":1}', id: '', event: 'message' },
      { data: 'two\nlines', id: '', event: 'message' },
      { data: 'last', id: 'done', event: 'x' },
    ])
  })

  it('dispatches nothing for a blank line without data, and keeps the id for later events', () => {
    expect(read('id: 7\n\n\n\ndata: x\n\n', 4)).toEqual([{ data: 'x', id: '7', event: 'message' }])
  })

  it('gives an event the type its event field names, and the next one without it the default type again', () => {
    expect(read('event: chunk\nid: 1\ndata: {"seq":1}\n\ndata: {"status":"running"}\n\nevent: chunk\n\ndata: y\n\n', 5)).toEqual([
      { data: '{"seq":1}', id: '1', event: 'chunk' },
      { data: '{"status":"running"}', id: '1', event: 'message' },
      // A type without data dispatches nothing, and does not outlive its blank line.
      { data: 'y', id: '1', event: 'message' },
    ])
  })

  it('ends a line at a CRLF whose CR closes one piece and whose LF opens the next, once', () => {
    const reader = new EventStreamReader()
    expect(reader.push('data: a\r')).toEqual([])
    expect(reader.push('\ndata: b\r')).toEqual([])
    expect(reader.push('')).toEqual([])
    expect(reader.push('\n\r')).toEqual([{ data: 'a\nb', id: '', event: 'message' }])
    expect(reader.push('\ndata: c\r\n\r\n')).toEqual([{ data: 'c', id: '', event: 'message' }])
  })

  it.each([
    ['CRLF', '\r\n'],
    ['CR', '\r'],
    ['LF', '\n'],
  ])('finds the same events however a stream with %s line ends is cut in two or three', (_, end) => {
    const text = [': hi', 'event: x', 'id: 1', 'data:', 'data: a: b', '', 'data:c', 'retry: 5', '', ''].join(end)
    const whole = read(text, text.length)
    expect(whole).toEqual([
      { data: '\na: b', id: '1', event: 'x' },
      { data: 'c', id: '1', event: 'message' },
    ])
    for (let a = 0; a <= text.length; a++) {
      for (let b = a; b <= text.length; b++) {
        const reader = new EventStreamReader()
        const events = [...reader.push(text.slice(0, a)), ...reader.push(text.slice(a, b)), ...reader.push(text.slice(b))]
        expect(events, `cut at ${a} and ${b}`).toEqual(whole)
      }
    }
  })

  it('reads a 4 MiB result in 1 KiB pieces in less than ten times what it takes in one piece', () => {
    const data = `{"status":"completed","result":"${'x'.repeat(4 * 1024 * 1024)}"}`
    const text = `event: message\nid: 9\ndata: ${data}\n\n`
    const pieces: string[] = []
    for (let at = 0; at < text.length; at += 1024) pieces.push(text.slice(at, at + 1024))
    // What a page pays for a result, as subscribeRun does: the events, then the JSON of their data.
    const timed = (list: string[]) => {
      const reader = new EventStreamReader()
      const events: StreamEvent[] = []
      const started = performance.now()
      for (const piece of list) events.push(...reader.push(piece))
      const runs = events.map((event) => JSON.parse(event.data))
      const took = performance.now() - started
      expect(runs).toHaveLength(1)
      expect(runs[0].result).toHaveLength(4 * 1024 * 1024)
      return took
    }
    // The best of a few rounds, taken in turn, so that the collector or a busy machine does not decide it.
    let whole = Number.POSITIVE_INFINITY
    let cut = Number.POSITIVE_INFINITY
    const began = performance.now()
    for (let round = 0; round < 10 && performance.now() - began < 2000; round++) {
      whole = Math.min(whole, timed([text]))
      cut = Math.min(cut, timed(pieces))
    }
    expect(cut, `1 KiB pieces took ${cut.toFixed(2)} ms, one piece ${whole.toFixed(2)} ms`).toBeLessThan(whole * 10)
  }, 120_000)

  it('reads a long stream in time that grows with its length only', () => {
    const text = 'data: x\n\n'.repeat(100_000)
    const started = performance.now()
    expect(read(text, 4096)).toHaveLength(100_000)
    expect(performance.now() - started).toBeLessThan(2000)
  })
})

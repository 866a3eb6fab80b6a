/**
 * Reading `text/event-stream` as it arrives (WHATWG HTML, "Event stream
 * interpretation"), however the bytes are split: any line ending, data
 * lines joined, comments and unknown fields passed over, an event's type
 * for that event alone, the last event id kept.
 */
import { describe, expect, it } from 'vitest'
import { EventStreamReader } from '../../src/client/event-stream.ts'

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

  it('reads a long stream in time that grows with its length only', () => {
    const text = 'data: x\n\n'.repeat(100_000)
    const started = performance.now()
    expect(read(text, 4096)).toHaveLength(100_000)
    expect(performance.now() - started).toBeLessThan(2000)
  })
})

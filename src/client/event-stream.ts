/**
 * Reading a `text/event-stream` body as it arrives (WHATWG HTML,
 * "Server-sent events", "Event stream interpretation"): lines end with CR,
 * LF or CRLF; a blank line dispatches the event; `data:` lines join with a
 * newline; `event:` sets the type of that event alone; `id:` sets the last
 * event id; comments and other fields pass.
 *
 * Work is linear in the text received, however it is cut: each piece is
 * scanned once, and a line or an event spread over many pieces is kept as
 * a list of parts joined once when it ends. Gluing the unread tail to each
 * new piece would re-scan it every time: quadratic, over a minute for a
 * 4 MiB result in 1 KiB pieces.
 */

/** One event: its data, its type (`message` when it named none), and the last event id at the time it came. */
export interface StreamEvent {
  data: string
  id: string
  event: string
}

export class EventStreamReader {
  /** The parts of the line not ended yet, from earlier pieces. */
  #line: string[] = []
  /** Whether the last piece ended with a CR: an LF opening the next one ends no other line. */
  #afterCR = false
  #lineEnd = /\r\n?|\n/g
  #data: string[] = []
  #id = ''
  #event = ''

  /** Takes the next piece of text and returns the events it completed. */
  push(text: string): StreamEvent[] {
    const events: StreamEvent[] = []
    let start = 0
    if (this.#afterCR && text !== '') {
      this.#afterCR = false
      if (text.charCodeAt(0) === 10) start = 1
    }
    const lineEnd = this.#lineEnd
    lineEnd.lastIndex = start
    for (let end = lineEnd.exec(text); end !== null; end = lineEnd.exec(text)) {
      let line = text.slice(start, end.index)
      if (this.#line.length > 0) {
        this.#line.push(line)
        line = this.#line.join('')
        this.#line = []
      }
      this.#field(line, events)
      start = lineEnd.lastIndex
    }
    if (start < text.length) this.#line.push(text.slice(start))
    else if (text !== '' && text.charCodeAt(text.length - 1) === 13) this.#afterCR = true
    return events
  }

  #field(line: string, events: StreamEvent[]): void {
    if (line === '') {
      if (this.#data.length > 0) events.push({ data: this.#data.join('\n'), id: this.#id, event: this.#event || 'message' })
      this.#data = []
      this.#event = ''
      return
    }
    if (line.charCodeAt(0) === 58) return
    const colon = line.indexOf(':')
    const field = colon === -1 ? line : line.slice(0, colon)
    let value = colon === -1 ? '' : line.slice(colon + 1)
    if (value.charCodeAt(0) === 32) value = value.slice(1)
    if (field === 'data') this.#data.push(value)
    else if (field === 'event') this.#event = value
    else if (field === 'id' && !value.includes('\0')) this.#id = value
  }
}

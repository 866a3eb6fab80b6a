/**
 * Reading a `text/event-stream` body as it arrives (WHATWG HTML,
 * "Server-sent events", "Event stream interpretation"): lines end with CR,
 * LF or CRLF; a blank line dispatches the event; `data:` lines join with a
 * newline; `event:` sets the type of that event alone; `id:` sets the last
 * event id; comments and other fields pass.
 * One scan over the text: each character is looked at once.
 */

/** One event: its data, its type (`message` when it named none), and the last event id at the time it came. */
export interface StreamEvent {
  data: string
  id: string
  event: string
}

export class EventStreamReader {
  #pending = ''
  #data: string[] = []
  #id = ''
  #event = ''

  /** Takes the next piece of text and returns the events it completed. */
  push(text: string): StreamEvent[] {
    const buffer = this.#pending + text
    const events: StreamEvent[] = []
    let start = 0
    for (let i = 0; i < buffer.length; i++) {
      const c = buffer.charCodeAt(i)
      if (c !== 10 && c !== 13) continue
      // A CR at the end may be the first half of a CRLF still on its way.
      if (c === 13 && i + 1 === buffer.length) break
      this.#line(buffer.slice(start, i), events)
      if (c === 13 && buffer.charCodeAt(i + 1) === 10) i++
      start = i + 1
    }
    this.#pending = buffer.slice(start)
    return events
  }

  #line(line: string, events: StreamEvent[]): void {
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

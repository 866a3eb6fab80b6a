/**
 * A real HTTP server that task handlers report to: `GET <url>/start?id=&key=`
 * when an attempt begins and `/end?id=&key=` when it ends, from this
 * process or another one. It keeps the order of the reports and the most
 * attempts it saw open at once, per key and in all.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface OverlapServer {
  url: string
  /** Run ids in the order their starts were reported. */
  starts: string[]
  ends: string[]
  /** The most attempts open at once, in all. */
  maxOpen(): number
  /** The most attempts open at once with this key. */
  maxOpenFor(key: string): number
  close(): Promise<void>
}

export async function overlapServer(): Promise<OverlapServer> {
  const starts: string[] = []
  const ends: string[] = []
  const open = new Map<string, number>()
  const max = new Map<string, number>()
  let openAll = 0
  let maxAll = 0
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x')
    const id = url.searchParams.get('id') ?? ''
    const key = url.searchParams.get('key') ?? ''
    if (url.pathname === '/start') {
      starts.push(id)
      openAll++
      maxAll = Math.max(maxAll, openAll)
      const n = (open.get(key) ?? 0) + 1
      open.set(key, n)
      max.set(key, Math.max(max.get(key) ?? 0, n))
    } else if (url.pathname === '/end') {
      ends.push(id)
      openAll--
      open.set(key, (open.get(key) ?? 0) - 1)
    }
    res.end('ok')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    starts,
    ends,
    maxOpen: () => maxAll,
    maxOpenFor: (key) => max.get(key) ?? 0,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

/** Reports the start of an attempt, waits `ms`, reports its end. */
export async function reportAttempt(url: string, id: string, key: string, ms: number): Promise<void> {
  const query = `id=${encodeURIComponent(id)}&key=${encodeURIComponent(key)}`
  await (await fetch(`${url}/start?${query}`)).text()
  await new Promise((resolve) => setTimeout(resolve, ms))
  await (await fetch(`${url}/end?${query}`)).text()
}

import { describe, expect, it } from 'vitest'
import type { RuntimePage, SvcRequest } from '../../src/index.ts'
import { serve } from './_helpers.ts'

const env = { NODE_ENV: 'production', THEN_TASK_SECRET: 't' }

function blog(): RuntimePage {
  let renders = 0
  return {
    path: '/blog/:slug',
    mode: 'hybrid',
    revalidate: 600,
    module: { default: (req: SvcRequest) => `<p>${req.param('slug')} ${++renders}</p>` },
  }
}

async function cacheState(url: string): Promise<string | null> {
  const res = await fetch(url)
  await res.arrayBuffer()
  return res.headers.get('x-svc-cache')
}

async function revalidate(base: string, paths: string[]): Promise<{ status: number; purged: string[] }> {
  const res = await fetch(`${base}/__svc/revalidate`, {
    method: 'POST',
    headers: { authorization: 'Bearer t', 'content-type': 'application/json' },
    body: JSON.stringify({ paths }),
  })
  const body = (await res.json()) as { purged: string[] }
  return { status: res.status, purged: body.purged }
}

describe('revalidating by path compares paths as URLs, however they are escaped', () => {
  // Cache keys come from the request URL, where `é` and a space are
  // percent-encoded; a revalidation names the page as a person writes it.
  it('purges a page whose path has non-ASCII letters or spaces, given as written', async () => {
    const server = await serve({ pages: [blog()], env })
    expect(await cacheState(`${server.url}/blog/café`)).toBe('MISS')
    expect(await cacheState(`${server.url}/blog/a%20b?x=1`)).toBe('MISS')
    expect(await cacheState(`${server.url}/blog/café`)).toBe('HIT')
    const res = await revalidate(server.url, ['/blog/café', '/blog/a b'])
    expect(res.status).toBe(200)
    expect(res.purged.sort()).toEqual(['/blog/a%20b?x=1', '/blog/caf%C3%A9'])
    expect(await cacheState(`${server.url}/blog/café`)).toBe('MISS')
    expect(await cacheState(`${server.url}/blog/a%20b?x=1`)).toBe('MISS')
  })

  it('purges the same page reached through an escaped path', async () => {
    const server = await serve({ pages: [blog()], env })
    // `%61` is `a`: the same page, cached under a second key.
    await cacheState(`${server.url}/blog/a`)
    await cacheState(`${server.url}/blog/%61`)
    const res = await revalidate(server.url, ['/blog/a'])
    expect(res.purged.sort()).toEqual(['/blog/%61', '/blog/a'])
    expect(await cacheState(`${server.url}/blog/%61`)).toBe('MISS')
  })

  it('keeps an escaped slash apart from a path separator', async () => {
    const server = await serve({ pages: [blog()], env })
    // `a%2Fb` is one segment (slug "a/b"); `/blog/a/b` would be another page.
    await cacheState(`${server.url}/blog/a%2Fb`)
    expect((await revalidate(server.url, ['/blog/a/b'])).purged).toEqual([])
    expect((await revalidate(server.url, ['/blog/a%2fb'])).purged).toEqual(['/blog/a%2Fb'])
  })

  it('matches a path with a query string against the same query, escaped or not', async () => {
    const server = await serve({ pages: [blog()], env })
    await cacheState(`${server.url}/blog/x?q=café`)
    await cacheState(`${server.url}/blog/x?q=other`)
    const res = await revalidate(server.url, ['/blog/x?q=café'])
    expect(res.purged).toEqual(['/blog/x?q=caf%C3%A9'])
    expect(await cacheState(`${server.url}/blog/x?q=other`)).toBe('HIT')
  })
})

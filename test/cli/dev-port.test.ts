// `svc dev` on a port another process holds says which port, and how to pick another.
import { createServer } from 'node:net'
import { describe, expect, it } from 'vitest'
import { writeApp } from '../targets/_app.ts'
import { svc } from './_svc.ts'

describe('svc dev on a port in use', () => {
  it('names the port and --port as the fix, and exits 1', async () => {
    const app = await writeApp({ 'src/api/hello.ts': 'export function GET() { return "hi" }\n' })
    const busy = createServer()
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve))
    const port = (busy.address() as { port: number }).port
    try {
      const { code, stderr, killed } = await svc(['dev', '--port', String(port), '--host', '127.0.0.1', '--root', app.root], {
        env: { SVC_STORE_URL: 'memory' },
      })
      expect(killed).toBe(false)
      expect(code).toBe(1)
      expect(stderr).toContain(`port ${port} is already in use on 127.0.0.1`)
      expect(stderr).toContain('svc dev --port <number>')
      // The message, not a stack trace.
      expect(stderr).not.toMatch(/^\s+at /m)
    } finally {
      await new Promise((resolve) => busy.close(resolve))
      await app.cleanup()
    }
  })
})

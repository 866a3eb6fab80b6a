// How the CLI's output reaches its reader: whole, whatever state the pipe is in.
import { spawn } from 'node:child_process'
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { svc } from './_svc.ts'

const BIN = fileURLToPath(new URL('../../bin/svc.mjs', import.meta.url))

// An app whose `routes inspect --json` is several times a pipe's 64 KiB buffer.
const app = mkdtempSync(join(tmpdir(), 'svc-cli-output-'))
afterAll(() => rmSync(app, { recursive: true, force: true }))
for (let i = 0; i < 300; i++) {
  mkdirSync(join(app, `src/api/area-${i % 10}`), { recursive: true })
  writeFileSync(join(app, `src/api/area-${i % 10}/route-${i}.ts`), `export function GET() {\n  return { route: ${i} }\n}\n`)
}
const args = ['routes', 'inspect', '--json', '--root', app]

describe('output', () => {
  it('reaches a reader that falls behind, through a pipe another process left non-blocking', async () => {
    const expected = (await svc(args)).stdout
    expect(expected.length).toBeGreaterThan(2 * 65_536)
    // The wrapper makes its stdout stream, which sets the pipe non-blocking,
    // then becomes the CLI in the same process, on the same pipe.
    const wrapper = `process.stdout; process.execve(process.execPath, [process.execPath, ${JSON.stringify(BIN)}, ...${JSON.stringify(args)}])`
    const child = spawn(process.execPath, ['-e', wrapper], { env: { ...process.env, NO_COLOR: '1' } })
    // Nothing is read until the CLI has ended or has had ample time to fill the pipe.
    child.stdout.pause()
    const chunks: Buffer[] = []
    let stderr = ''
    child.stderr.on('data', (chunk) => (stderr += chunk))
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve))
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 2_000))])
    child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk))
    child.stdout.resume()
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' })
    expect(Buffer.concat(chunks).toString('utf8')).toBe(expected)
  })

  it('ends quietly when its reader goes away before the output is written (svc … | head)', async () => {
    const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, NO_COLOR: '1' } })
    // The read end closes at once: every write of the CLI meets EPIPE.
    child.stdout.destroy()
    let stderr = ''
    child.stderr.on('data', (chunk) => (stderr += chunk))
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' })
  })

  it('ends quietly when its reader goes away while the stream still holds output', async () => {
    // As in the first test: a non-blocking pipe that fills, so the rest waits in process.stdout.
    const wrapper = `process.stdout; process.execve(process.execPath, [process.execPath, ${JSON.stringify(BIN)}, ...${JSON.stringify(args)}])`
    const child = spawn(process.execPath, ['-e', wrapper], { env: { ...process.env, NO_COLOR: '1' } })
    child.stdout.pause()
    let stderr = ''
    child.stderr.on('data', (chunk) => (stderr += chunk))
    const closed = new Promise<number | null>((resolve) => child.on('close', resolve))
    // The reader reads the first chunk, then goes away with the rest unread.
    await new Promise<void>((resolve) => child.stdout.once('readable', () => resolve()))
    await new Promise((resolve) => setTimeout(resolve, 500))
    child.stdout.destroy()
    expect({ code: await closed, stderr }).toEqual({ code: 0, stderr: '' })
  })

  it('prints the same bytes to a file as to a pipe', async () => {
    const file = join(app, 'out.json')
    const fd = openSync(file, 'w')
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', fd, 'ignore'], env: { ...process.env, NO_COLOR: '1' } })
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
    closeSync(fd)
    expect(code).toBe(0)
    expect(readFileSync(file, 'utf8')).toBe((await svc(args)).stdout)
  })
})

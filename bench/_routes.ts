/**
 * Realistic route files for the scan benchmark: serverless handlers with
 * schemas and helpers, scheduled and enqueued tasks with steps, hot routes
 * with rooms, and media routes with heavy imports, in a nested tree.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'

const AREAS = ['users', 'orders', 'billing', 'catalog', 'reports', 'admin', 'chat', 'media', 'search', 'notifications']
const RESOURCES = ['items', 'accounts', 'invoices', 'sessions', 'events', 'files', 'teams', 'comments', 'tags', 'exports']

export interface GeneratedFile {
  path: string
  source: string
}

function serverless(i: number, resource: string): string {
  return `import { defineSchema } from 'svcjs'
import * as v from 'valibot'
import { db } from '../../_lib/db.ts'
import { requireUser } from '../../_lib/auth.ts'

export const schema = defineSchema({
  query: v.object({ limit: v.optional(v.string()), cursor: v.optional(v.string()) }),
})

// Pages through ${resource}; the cursor is the last id of the previous page.
const PAGE_SIZE = ${10 + (i % 40)}

function toDto(row) {
  return {
    id: row.id,
    name: row.name,
    createdAt: new Date(row.created_at).toISOString(),
    tags: (row.tags ?? '').split(',').filter(Boolean),
    owner: row.owner_id ? { id: row.owner_id, name: row.owner_name } : null,
  }
}

export async function GET(req, reply) {
  const user = await requireUser(req)
  const limit = Math.min(Number(req.query.limit ?? PAGE_SIZE), 100)
  const rows = await db.query(
    'select * from ${resource} where owner_id = $1 and id > $2 order by id limit $3',
    [user.id, req.query.cursor ?? '', limit],
  )
  const items = rows.map(toDto)
  return reply.json({ items, next: items.length === limit ? items[items.length - 1].id : null })
}

export async function POST(req, reply) {
  const user = await requireUser(req)
  const body = await req.json()
  if (typeof body.name !== 'string' || body.name.length === 0) {
    return reply.status(400).json({ error: 'name is required' })
  }
  const [row] = await db.query('insert into ${resource} (name, owner_id) values ($1, $2) returning *', [body.name, user.id])
  return reply.status(201).json(toDto(row))
}
`
}

function task(i: number, name: string): string {
  const scheduled = i % 2 === 0
  return `import * as v from 'valibot'
import { db } from '../../_lib/db.ts'
import { sendMail } from '../../_lib/mail.ts'

export const route = {
  kind: 'task',
  retries: ${i % 4},
  timeout: ${60_000 + (i % 5) * 30_000},
  compute: { class: 'function', memory: '${['1gb', '4gb'][i % 2]}' },
} as const
${scheduled ? `export const schedule = '${i % 60} ${i % 24} * * *'\n` : ''}
export const input = v.object({ accountId: v.string(), dryRun: v.optional(v.boolean()) })

export async function POST(ctx) {
  const { accountId, dryRun } = ctx.input
  const account = await ctx.step.run('load-account', () => db.one('select * from accounts where id = $1', [accountId]))
  const lines = await ctx.step.run('collect-${name}', async () => {
    const rows = await db.query('select * from ledger where account_id = $1', [accountId])
    return rows.map((row) => ({ id: row.id, amount: row.amount, currency: row.currency }))
  })
  const total = lines.reduce((sum, line) => sum + line.amount, 0)
  if (dryRun) return { total, count: lines.length }
  await ctx.step.run('notify', () => sendMail(account.email, 'Your ${name} summary', \`Total: \${total}\`))
  await ctx.step.sleep('cooldown', ${30 + i})
  return { total, count: lines.length }
}
`
}

function hot(i: number): string {
  return `const rooms = new Map()
let connections = 0

export const route = { kind: 'hot', origins: ['https://app.example.com', 'https://admin.example.com/'] }

function broadcast(room, message, except) {
  for (const peer of rooms.get(room) ?? []) if (peer !== except) peer.send(message)
}

export function websocket(peer, req) {
  const room = new URL(req.url).searchParams.get('room') ?? 'lobby-${i}'
  if (!rooms.has(room)) rooms.set(room, new Set())
  rooms.get(room).add(peer)
  connections++
  peer.on('message', (data) => broadcast(room, String(data), peer))
  peer.on('close', () => {
    rooms.get(room)?.delete(peer)
    connections--
  })
}

export async function GET(req, reply) {
  return reply.json({ rooms: rooms.size, connections })
}
`
}

function media(i: number): string {
  return `import sharp from 'sharp'
import { readFile } from 'node:fs/promises'
import { storage } from '../../_lib/storage.ts'

export const route = { compute: { class: 'function', memory: '${['4gb', '6gb', '1gb'][i % 3]}' } }

const SIZES = [64, 128, 256, 512]

export async function POST(req, reply) {
  const form = await req.formData()
  const file = form.get('file')
  if (!file) return reply.status(400).json({ error: 'file is required' })
  const input = Buffer.from(await file.arrayBuffer())
  const watermark = await readFile(new URL('../../assets/mark.png', import.meta.url))
  const outputs = await Promise.all(
    SIZES.map(async (size) => {
      const image = await sharp(input).resize(size, size, { fit: 'cover' }).composite([{ input: watermark }]).webp().toBuffer()
      const key = \`thumbs/\${crypto.randomUUID()}-\${size}.webp\`
      await storage.put(key, image)
      return { size, key }
    }),
  )
  return reply.json({ outputs })
}
`
}

/** `count` route files with unique paths, in a fixed mix: 60% serverless, 20% tasks, 10% hot, 10% media. */
export function generateRoutes(count: number): GeneratedFile[] {
  const files: GeneratedFile[] = []
  for (let i = 0; i < count; i++) {
    const area = AREAS[i % AREAS.length]
    const resource = RESOURCES[Math.floor(i / AREAS.length) % RESOURCES.length]
    const bucket = Math.floor(i / (AREAS.length * RESOURCES.length))
    const dir = `src/api/${area}/${resource}${bucket ? `-${bucket}` : ''}`
    const mix = i % 10
    if (mix < 6) files.push({ path: `${dir}/${mix % 2 ? '[id]' : 'index'}.ts`, source: serverless(i, resource) })
    else if (mix < 8) files.push({ path: `${dir}/sync.ts`, source: task(i, resource) })
    else if (mix < 9) files.push({ path: `${dir}/live.ts`, source: hot(i) })
    else files.push({ path: `${dir}/thumbnail.ts`, source: media(i) })
  }
  return files
}

/** Writes `count` generated route files into a new temporary app; returns its root and total source size. */
export function writeGeneratedApp(count: number): { root: string; bytes: number } {
  const root = mkdtempSync(join(tmpdir(), `svc-bench-routes-${count}-`))
  let bytes = 0
  for (const file of generateRoutes(count)) {
    mkdirSync(dirname(join(root, file.path)), { recursive: true })
    writeFileSync(join(root, file.path), file.source)
    bytes += file.source.length
  }
  return { root, bytes }
}

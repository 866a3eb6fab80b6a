// A scheduled task: runs every five minutes with ctx.input = { _cron: true }.
export const route = { kind: 'task', timeout: 5_000 } as const
export const schedule = '*/5 * * * *'

export async function POST(ctx: { input: unknown }) {
  return { cleaned: 0, input: ctx.input }
}

/**
 * The interface the server binds. The `host`
 * option, then `HOST`, then `0.0.0.0` in production. Outside production the
 * default is `127.0.0.1`: a development or test server is not reachable from
 * the network unless asked to be, and the literal address (unlike
 * `localhost`, which may resolve to `::1` only) is what clients expect.
 */

export const PRODUCTION_HOST = '0.0.0.0'
export const LOCAL_HOST = '127.0.0.1'

export function resolveHost(option: string | undefined, env: Record<string, string | undefined>): string {
  if (option !== undefined) return option
  if (env.HOST) return env.HOST
  return env.NODE_ENV === 'production' ? PRODUCTION_HOST : LOCAL_HOST
}

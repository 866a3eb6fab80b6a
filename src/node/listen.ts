/**
 * The srvx options every svc server listens with, on Node, Bun and Deno.
 */
export const LISTEN_OPTIONS = {
  // Listening waits for serve(), after the server's own listeners are in
  // place, and a failure to bind rejects there.
  manual: true,
  silent: true,
  // svc drains itself (./app-server.ts): 503 to late requests, WebSockets, task attempts.
  gracefulShutdown: false,
} as const

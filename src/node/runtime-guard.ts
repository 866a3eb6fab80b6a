/**
 * `startSvcServer` is Node's: it is built on `node:http` through srvx's Node
 * adapter, and its WebSockets on crossws's Node adapter, which refuses to
 * start on Bun or Deno. There the app runs on the runtime's own server
 * instead, which this check names before anything is opened.
 */

/** Throws, naming the build target to use, when this process runs on Bun or Deno. */
export function refuseOtherRuntimes(where: string): void {
  const versions = process.versions as Record<string, string | undefined>
  const [name, target, version] = versions.bun ? ['Bun', 'bun', versions.bun] : versions.deno ? ['Deno', 'deno', versions.deno] : []
  if (!target) return
  throw new Error(
    `${where} runs on Node only (this is ${name} ${version}). Build the app with \`svc build --target ${target}\` and run .output/${target}/server.mjs, ` +
      `or start it from code with start${name}Server() from svc/${target}, which takes the same options`,
  )
}

// One instance of a built function, in a process of its own, as the platform
// would start it: `node _function-instance.mjs lambda <index.mjs>` reads
// events as JSON lines on stdin and writes each result as a JSON line;
// `node _function-instance.mjs vercel <index.mjs>` serves the function on a
// free port and writes `{ "port": n }`. It never exits by itself: the test
// kills it, as a platform recycles an instance, with SIGKILL.
import { createServer } from 'node:http'
import { createInterface } from 'node:readline'
import { pathToFileURL } from 'node:url'

const [target, bundle] = process.argv.slice(2)
const built = await import(pathToFileURL(bundle).href)
const write = (value) => process.stdout.write(`${JSON.stringify(value)}\n`)

if (target === 'lambda') {
  for await (const line of createInterface({ input: process.stdin })) {
    const { event, remainingMs } = JSON.parse(line)
    const context = remainingMs === undefined ? undefined : { getRemainingTimeInMillis: () => remainingMs }
    await built.handler(event, context).then(
      (result) => write({ result }),
      (error) => write({ error: String(error?.message ?? error) }),
    )
  }
} else {
  const server = createServer((req, res) => void built.default(req, res).catch((error) => console.error(error)))
  server.listen(0, '127.0.0.1', () => write({ port: server.address().port }))
}
// Keeps the process alive once stdin ends, as a frozen instance stays around.
setInterval(() => {}, 60_000)

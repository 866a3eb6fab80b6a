/**
 * The app's README: the next commands first, then what the template added.
 * @param {import('./templates.mjs').Template} template
 * @param {{ name: string, templateName: string, run: (script: string) => string, install: string }} options
 */
export function appReadme(template, { name, templateName, run, install }) {
  const durable = templateName === 'durable'
  const cloudflare = template.target === 'cloudflare'
  const lines = [
    `# ${name}`,
    '',
    `An [svc](https://www.npmjs.com/package/svcjs) app, from the \`${templateName}\` template.`,
    '',
    ...commands([
      [install],
      [run('dev'), 'serves http://localhost:3000, reloads on change; runs dashboard at /__svc/dashboard'],
      [run('test'), 'node --test: calls the route and runs the tasks in-process'],
      [run('typecheck'), 'svc types (types enqueue() by task name), then tsc'],
      cloudflare
        ? [run('build'), 'a Cloudflare Worker in .output/cloudflare/ (see below)']
        : [run('build'), 'a Node server in .output/node/, with a Dockerfile'],
      ...(cloudflare ? [] : [[run('start'), 'runs the build on PORT (3000); set SVC_TASK_SECRET to reach /__tasks']]),
    ]),
    '',
    '- `src/api/hello.ts` answers `GET /api/hello`. Every file under `src/api/` is a route.',
    "- `src/api/jobs/report.ts` is a task (`route = { kind: 'task' }`). It runs every day at 06:00 UTC (its `schedule`), on `POST /__tasks/jobs.report`, or when code calls `enqueue('jobs.report')`. Each `ctx.step.run` is recorded, so a retry replays it rather than running it again.",
    ...(durable
      ? [
          '- `src/api/jobs/onboard.ts` is a task with an input schema, steps and a sleep of a day. Start one while `svc dev` runs: `curl -X POST localhost:3000/__tasks/jobs.onboard -H \'content-type: application/json\' -d \'{"email":"ada@example.com"}\'`.',
          "- `test/onboard.test.ts` tests it with `svcjs/testing`: the task runs on svc's engine with a clock the test moves, so its day-long sleep and a retry after a failed email take milliseconds (`t.run`, `t.advance('1d')`, `t.mockStep`).",
        ]
      : []),
    '',
    '`npx svc routes inspect` lists the routes; `npx svc tasks run jobs.report` runs a task once, in the terminal.',
    '',
  ]
  if (durable) {
    lines.push(
      '## Durable runs',
      '',
      "A sleeping run is suspended, not held in memory: its input, steps and timer are kept in a SQLite file (Node's built-in `node:sqlite`), so after a restart or a deploy it goes on where it stopped, and the steps it already ran are not run again.",
      '',
      '`SVC_STORE_URL` says where runs are kept, for `svc dev` and the built server alike:',
      '',
      '| `SVC_STORE_URL` | Runs are kept in |',
      '|---|---|',
      '| unset | `.svc/runs.db` under the app (`svc dev`) or under the directory the server starts in |',
      "| `sqlite:./data/runs.db` | that SQLite file (a relative path starts at the app, or at the server's directory) |",
      '| `postgres://user:pass@host/db` | Postgres, shared by every process that names it |',
      '| `memory` | memory only, lost when the process ends |',
      '',
      `For example \`SVC_STORE_URL=sqlite:./data/runs.db ${run('start')}\`. In a container, keep the file on a volume, or use Postgres.`,
      '',
    )
  }
  if (cloudflare) {
    lines.push(
      '## Cloudflare Workers',
      '',
      'The build writes `.output/cloudflare/index.mjs` and a `wrangler.json` beside it, with a cron trigger for each scheduled task and a SQLite-backed Durable Object (`SvcTasks`) that keeps the task runs. Try it and deploy it with wrangler:',
      '',
      ...commands([
        [run('build')],
        [run('preview'), 'wrangler dev: the built worker on http://localhost:8787'],
        ['npx wrangler login'],
        ['npx wrangler secret put SVC_TASK_SECRET --config .output/cloudflare/wrangler.json'],
        [run('deploy')],
      ]),
      '',
      'The secret guards `/__tasks` on the deployed worker. A worker bundle cannot hold Node built-ins (`node:fs`, `node:net`, …) or WebSocket `hot` routes; the build names any it finds. Keep the `v1` migration of `wrangler.json` in later deploys: it is what makes the Durable Object store SQLite. Cron triggers fire in UTC. `svc dev` runs the app on Node while you work.',
      '',
      '`wrangler dev` does not fire cron triggers by itself. Fire one schedule, naming its expression with `+` for spaces (the bare URL wrangler prints names none, and fires nothing):',
      '',
      ...commands([['curl "http://localhost:8787/cdn-cgi/local/scheduled?cron=0+6+*+*+*"', 'runs the tasks scheduled on 0 6 * * *']]),
      '',
    )
  }
  return lines.join('\n')
}

/**
 * A shell block, with the comments lined up.
 * @param {Array<[string, string?]>} rows
 */
function commands(rows) {
  const width = Math.max(...rows.filter(([, note]) => note).map(([command]) => command.length))
  return ['```sh', ...rows.map(([command, note]) => (note ? `${command.padEnd(width)}  # ${note}` : command)), '```']
}

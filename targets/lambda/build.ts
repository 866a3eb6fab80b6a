import { join } from 'node:path'
import type { TargetDescriptor } from '#svc/build/target.ts'
import { lambdaSchedules } from './schedules.ts'

/** `.output/lambda/index.mjs` exporting `handler`, and `schedules.json` listing every schedule and, when the app has tasks, the one-minute tick. */
export const lambdaTarget: TargetDescriptor = {
  name: 'lambda',
  hot: false,
  // EventBridge Scheduler takes the time zone from schedules.json.
  cronTimezones: true,
  platform: 'node',
  // One function behind API Gateway or a function URL serves no files.
  staticHost: 'serve them from S3 behind CloudFront, or another static host',
  outDir: '.output/lambda',
  async write(ctx) {
    const out = join(ctx.root, this.outDir)
    const entry = `${ctx.appSource}
import { createLambdaHandler } from 'svcjs/lambda'
export const handler = createLambdaHandler(app)
`
    return [
      await ctx.bundle(entry, join(out, 'index.mjs')),
      await ctx.writeFile(join(out, 'schedules.json'), `${JSON.stringify({ schedules: lambdaSchedules(ctx.routes) }, null, 2)}\n`),
    ]
  },
}

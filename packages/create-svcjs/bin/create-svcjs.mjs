#!/usr/bin/env node
// `npm create svcjs@latest my-app` runs this (npm maps `create svcjs` to the
// create-svcjs package). It asks nothing: the flags choose, with defaults.
import { relative } from 'node:path'
import { parseCreateArgs, UsageError, usage } from '../src/args.mjs'
import { CreateError, commandsOf, createApp, packageManagerOf, VERSION } from '../src/create.mjs'

// The Node svc and its apps need (svc's `engines`): `node --test` runs the
// app's TypeScript tests without a flag from 22.18 on.
const MINIMUM = [22, 18]

try {
  const args = parseCreateArgs(process.argv.slice(2))
  if (args.help) {
    process.stdout.write(usage(VERSION))
  } else {
    const packageManager = packageManagerOf(process.env.npm_config_user_agent)
    const { root } = createApp({ ...args, packageManager })
    const where = relative(process.cwd(), root)
    const { install, run } = commandsOf(packageManager)
    const lines = [`Created ${where || root} from the ${args.template} template.`, '', 'Next:']
    if (where) lines.push(`  cd ${where.includes(' ') ? JSON.stringify(where) : where}`)
    lines.push(`  ${install}`, `  ${run('dev')}`, '')
    process.stdout.write(lines.join('\n'))
    const [major, minor] = process.versions.node.split('.').map(Number)
    if (major < MINIMUM[0] || (major === MINIMUM[0] && minor < MINIMUM[1])) {
      process.stderr.write(
        `Note: the app needs Node.js ${MINIMUM.join('.')} or later (this is ${process.version}). Install Node 24 LTS from https://nodejs.org.\n`,
      )
    }
  }
} catch (error) {
  if (error instanceof UsageError) {
    process.stderr.write(`${error.message}\n\nRun create-svcjs --help for the options.\n`)
  } else if (error instanceof CreateError) {
    process.stderr.write(`${error.message}\n`)
  } else {
    process.stderr.write(`${/** @type {Error} */ (error)?.stack ?? error}\n`)
  }
  process.exit(1)
}

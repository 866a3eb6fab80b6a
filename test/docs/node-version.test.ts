// One Node version asked of every user, wherever it is written: the
// packages' engines, the runtime's check, the command's own check, the app
// create-svcjs writes, and the docs a newcomer reads first.
import { readFileSync } from 'node:fs'
import { expect, it } from 'vitest'
import { MIN_NODE_VERSION } from '../../src/runtime/node-version.ts'
// @ts-expect-error plain JavaScript, without types
import { appPackage } from '../../packages/create-svcjs/src/templates.mjs'

const read = (file: string) => readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8')

it('is the same in package.json, create-svcjs, the runtime, bin/svc.mjs, the app template, README and getting started', () => {
  const minimum = MIN_NODE_VERSION.replace(/\.0$/, '')
  const [major, minor] = minimum.split('.')
  expect(JSON.parse(read('package.json')).engines.node).toBe(`>=${minimum}`)
  expect(JSON.parse(read('packages/create-svcjs/package.json')).engines.node).toBe(`>=${minimum}`)
  expect(read('bin/svc.mjs')).toContain(`const MINIMUM = [${major}, ${minor}]`)
  expect(read('packages/create-svcjs/bin/create-svcjs.mjs')).toContain(`const MINIMUM = [${major}, ${minor}]`)
  expect(appPackage({ target: 'node', files: {} }, { name: 'app', svcSpec: '*' }).engines.node).toBe(`>=${minimum}`)
  for (const doc of ['README.md', 'docs/getting-started.md', 'packages/create-svcjs/README.md']) {
    const named = [...read(doc).matchAll(/Node(?:\.js)? (\d+\.\d+) or later/g)].map((match) => match[1])
    expect(named.length, doc).toBeGreaterThan(0)
    expect(new Set(named), doc).toEqual(new Set([minimum]))
  }
})

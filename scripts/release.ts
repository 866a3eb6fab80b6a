/**
 * Versions the two packages together and checks that each would publish:
 * `svcjs` (this repository's root) and `create-svcjs`
 * (packages/create-svcjs), whose apps depend on the svcjs of its own
 * version, so the two always carry the same one.
 *
 *   node scripts/release.ts 0.2.0     sets both versions (and the lock file's), then `npm publish --dry-run` for each
 *   node scripts/release.ts --check   checks the versions agree, then the same dry runs
 *
 * `--ignore-scripts` passes on to npm: the dry run packs dist/ as it is,
 * without building it again. A prerelease (`1.0.0-rc.1`) goes under the
 * `next` tag. Publishing itself is `npm publish` (with `--tag next` for a
 * prerelease) in each directory, svcjs first, once the dry runs are clean.
 */
import { execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const PACKAGES = [
  { name: 'svcjs', dir: ROOT },
  { name: 'create-svcjs', dir: `${ROOT}packages/create-svcjs/` },
]
const VERSION = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$/

const args = process.argv.slice(2)
const ignoreScripts = args.includes('--ignore-scripts')
const [target] = args.filter((arg) => !arg.startsWith('--'))
if ((target === undefined) === !args.includes('--check')) {
  fail('usage: node scripts/release.ts <version> | --check [--ignore-scripts]')
}
if (target !== undefined && !VERSION.test(target)) fail(`"${target}" is not a version such as 0.2.0 or 1.0.0-rc.1`)

function fail(message: string): never {
  process.stderr.write(`release: ${message}\n`)
  process.exit(1)
}

/** A package.json or the lock file, as far as this script reads and writes them. */
interface Manifest {
  name?: string
  version?: string
  packages?: Record<string, { version?: string }>
}

function readJson(file: string): Manifest {
  return JSON.parse(readFileSync(file, 'utf8')) as Manifest
}

function writeJson(file: string, value: unknown): void {
  writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`)
}

for (const { name, dir } of PACKAGES) {
  const pkg = readJson(`${dir}package.json`)
  if (pkg.name !== name) fail(`${dir}package.json is named "${pkg.name}", not "${name}"`)
  if (target !== undefined) {
    pkg.version = target
    writeJson(`${dir}package.json`, pkg)
  }
}
if (target !== undefined) {
  const lock = readJson(`${ROOT}package-lock.json`)
  lock.version = target
  if (lock.packages?.['']) lock.packages[''].version = target
  writeJson(`${ROOT}package-lock.json`, lock)
}

const versions = PACKAGES.map(({ dir }) => readJson(`${dir}package.json`).version as string)
if (new Set(versions).size !== 1) {
  fail(
    `the packages carry different versions (${PACKAGES.map(({ name }, i) => `${name} ${versions[i]}`).join(', ')}): set both with node scripts/release.ts <version>`,
  )
}

// npm publishes a prerelease only under a tag other than `latest`.
const tag = versions[0].includes('-') ? ['--tag', 'next'] : []
for (const { name, dir } of PACKAGES) {
  const command = ['publish', '--dry-run', ...tag, ...(ignoreScripts ? ['--ignore-scripts'] : [])]
  let output: string
  try {
    output = execFileSync('npm', command, { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string }
    fail(`npm ${command.join(' ')} in ${dir} failed:\n${stderr ?? ''}${stdout ?? ''}`)
  }
  if (!output.includes(`+ ${name}@${versions[0]}`))
    fail(`npm publish --dry-run in ${dir} did not print "+ ${name}@${versions[0]}":\n${output}`)
  process.stdout.write(`${name}@${versions[0]}: npm publish --dry-run is clean\n`)
}

// A target is one folder, `targets/<name>/`, and one name in TARGET_NAMES.
// The files that cannot import that list (package.json, tsconfig.json) and
// those that derive from it must agree with it; each check names what is
// missing and where, as hono's build/validate-exports.ts does for its exports.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import ts from 'typescript'
import { afterAll, describe, expect, it } from 'vitest'
import buildConfig from '../../build.config.ts'
import { isTargetName, loadTarget } from '../../src/build/targets.ts'
import { SELF_ENTRIES, type SelfEntry } from '../../src/self/entries.ts'
import { TARGET_NAMES, targetEntry } from '../../src/self/targets.ts'
import { svc } from '../cli/_svc.ts'

const REPO = join(import.meta.dirname, '../..')
const LIST = 'TARGET_NAMES (src/self/targets.ts)'

type Export = string | { types?: string; default?: string }
const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as {
  exports: Record<string, Export>
  imports?: Record<string, string>
}

/** The entries build.config.ts builds, by name, with their input. */
const built = new Map(
  buildConfig
    .flatMap((config) => config.entries ?? [])
    .map((entry) => (typeof entry === 'string' ? { input: entry, name: entry } : entry))
    .map((entry) => [entry.name ?? entry.input, entry.input.replace(/^\.\//, '')] as const),
)

/** `svcjs/x` → `./x`, `svcjs` → `.`, the form of an `exports` key. */
const subpath = (specifier: string) => specifier.replace(/^svcjs/, '.')

describe('the one list of targets', () => {
  it('names every folder of targets/, and each name has its build step and runtime entry', () => {
    const problems: string[] = []
    const folders = readdirSync(join(REPO, 'targets'), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name)
    for (const folder of folders) if (!isTargetName(folder)) problems.push(`targets/${folder}/ is missing from ${LIST}`)
    for (const name of TARGET_NAMES) {
      for (const file of ['build.ts', 'runtime.ts'])
        if (!existsSync(join(REPO, 'targets', name, file))) problems.push(`"${name}" of ${LIST} has no targets/${name}/${file}`)
    }
    expect(problems).toEqual([])
  })

  it("loads each target's build step by its name", async () => {
    for (const name of TARGET_NAMES) expect((await loadTarget(name)).name).toBe(name)
  })

  it('targets reach svc through its import map (#svc/*), not through paths into src/', () => {
    expect(pkg.imports?.['#svc/*'], 'package.json imports["#svc/*"]').toBe('./src/*')
    const problems: string[] = []
    for (const name of TARGET_NAMES) {
      for (const file of readdirSync(join(REPO, 'targets', name)).filter((file) => file.endsWith('.ts'))) {
        const source = readFileSync(join(REPO, 'targets', name, file), 'utf8')
        for (const match of source.matchAll(/(?:from|import)\s*\(?\s*'((?:\.\.\/)+src\/[^']*)'/g)) {
          problems.push(`targets/${name}/${file} imports '${match[1]}'; write '#svc/${match[1].replace(/^(?:\.\.\/)+src\//, '')}'`)
        }
      }
    }
    expect(problems).toEqual([])
  })
})

describe("each target's runtime entry, svcjs/<name>", () => {
  it('is exported by package.json, with its types, from the files build.config.ts builds', () => {
    const problems: string[] = []
    for (const name of TARGET_NAMES) {
      const entry = targetEntry(name)
      const expected = { types: `./dist/${entry}.d.mts`, default: `./dist/${entry}.mjs` }
      const actual = pkg.exports[`./${entry}`]
      if (actual === undefined)
        problems.push(`package.json exports has no "./${entry}": ${JSON.stringify(expected)} (the runtime entry of targets/${name})`)
      else if (JSON.stringify(actual) !== JSON.stringify(expected))
        problems.push(`package.json exports["./${entry}"] is ${JSON.stringify(actual)}; it should be ${JSON.stringify(expected)}`)
    }
    expect(problems).toEqual([])
  })

  it('is an entry of build.config.ts', () => {
    const problems: string[] = []
    for (const name of TARGET_NAMES) {
      const entry = targetEntry(name)
      const input = built.get(entry)
      if (input !== `targets/${name}/runtime`)
        problems.push(
          `build.config.ts builds ${input === undefined ? 'no' : `"${input}" as the`} entry "${entry}"; it should build targets/${name}/runtime`,
        )
    }
    expect(problems).toEqual([])
  })

  it('is aliased by src/self/entries.ts to its runtime.ts, or to the file package.json exports', () => {
    const problems: string[] = []
    for (const name of TARGET_NAMES) {
      const specifier = `svcjs/${targetEntry(name)}` as SelfEntry
      const files = SELF_ENTRIES[specifier]
      const expected = [`targets/${name}/runtime.ts`, `dist/${targetEntry(name)}.mjs`]
      if (JSON.stringify(files) !== JSON.stringify(expected))
        problems.push(
          `src/self/entries.ts maps "${specifier}" to ${JSON.stringify(files)}; it should map it to ${JSON.stringify(expected)}`,
        )
    }
    expect(problems).toEqual([])
  })

  it('resolves, in tsc, to its runtime.ts through tsconfig.json paths', () => {
    const options = tsconfigOptions()
    const problems: string[] = []
    for (const name of TARGET_NAMES) {
      const specifier = `svcjs/${targetEntry(name)}`
      const resolved = ts.resolveModuleName(specifier, join(REPO, 'test/build/importer.ts'), options, ts.sys).resolvedModule
      const expected = join(REPO, 'targets', name, 'runtime.ts')
      if (resolved?.resolvedFileName !== expected)
        problems.push(
          `tsconfig.json paths resolve "${specifier}" to ${resolved?.resolvedFileName ?? 'nothing'}; add "${specifier}": ["./targets/${name}/runtime.ts"]`,
        )
    }
    expect(problems).toEqual([])
  })
})

describe('svc build --target, run as a command', () => {
  const app = mkdtempSync(join(tmpdir(), 'svc-target-lists-'))
  afterAll(() => rmSync(app, { recursive: true, force: true }))

  it('names every target in its help', async () => {
    const { code, stdout } = await svc(['build', '--help'])
    expect(code).toBe(0)
    const line = stdout.split('\n').find((text) => text.includes('--target')) ?? ''
    const named = new Set(line.match(/[\w-]+/g))
    expect(TARGET_NAMES.filter((name) => !named.has(name)).map((name) => `svc build --help does not name "${name}": ${line}`)).toEqual([])
  })

  it('refuses a name that is not a target, listing the targets', async () => {
    const { code, stdout, stderr } = await svc(['build', '--target', 'nope', '--root', app])
    expect(code).toBe(1)
    expect(stdout).toBe('')
    expect(stderr).toContain(`--target must be one of ${TARGET_NAMES.join(', ')} (got "nope")`)
  })

  it('builds an empty app for each target', async () => {
    const problems: string[] = []
    for (const name of TARGET_NAMES) {
      const { code, stdout, stderr } = await svc(['build', '--target', name, '--root', app], { boundMs: 30_000 })
      if (code !== 0 || !stdout.startsWith(`Built ${name} in `))
        problems.push(`svc build --target ${name} exited with ${code}:\n${stdout}${stderr}`)
    }
    expect(problems).toEqual([])
  }, 120_000)
})

describe("svc's other entry points", () => {
  it('package.json exports one subpath per entry of build.config.ts, the CLI aside', () => {
    const problems: string[] = []
    const exported = Object.keys(pkg.exports).filter((key) => key !== './package.json')
    for (const key of exported) {
      const name = key === '.' ? 'index' : key.slice(2)
      if (!built.has(name)) problems.push(`package.json exports "${key}", which build.config.ts does not build (no entry named "${name}")`)
    }
    for (const name of built.keys()) {
      const key = name === 'index' ? '.' : `./${name}`
      if (name !== 'cli' && !exported.includes(key))
        problems.push(`build.config.ts builds "${name}", which package.json does not export as "${key}"`)
    }
    expect(problems).toEqual([])
  })

  it('each alias of src/self/entries.ts is exported by package.json with its built file, and resolves in tsc to its source', () => {
    const options = tsconfigOptions()
    const problems: string[] = []
    for (const [specifier, [source, dist]] of Object.entries(SELF_ENTRIES)) {
      const exported = pkg.exports[subpath(specifier)]
      const published = typeof exported === 'string' ? exported : exported?.default
      if (published !== `./${dist}`)
        problems.push(`package.json exports["${subpath(specifier)}"] publishes ${published}; src/self/entries.ts aliases it to ${dist}`)
      const resolved = ts.resolveModuleName(specifier, join(REPO, 'test/build/importer.ts'), options, ts.sys).resolvedModule
      if (resolved?.resolvedFileName !== join(REPO, source))
        problems.push(
          `tsconfig.json paths resolve "${specifier}" to ${resolved?.resolvedFileName ?? 'nothing'}; src/self/entries.ts aliases it to ${source}`,
        )
    }
    expect(problems).toEqual([])
  })
})

function tsconfigOptions(): ts.CompilerOptions {
  const file = join(REPO, 'tsconfig.json')
  const { config, error } = ts.readConfigFile(file, ts.sys.readFile)
  if (error) throw new Error(ts.flattenDiagnosticMessageText(error.messageText, '\n'))
  return ts.parseJsonConfigFileContent(config, ts.sys, REPO).options
}

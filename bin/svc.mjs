#!/usr/bin/env node
// The `svc` command. The published package runs the CLI from dist/; a
// checkout of the repository runs it from its TypeScript sources, so the
// command always matches them and needs no build. This file is plain
// JavaScript so that any Node can read it and say what it needs.

// The oldest Node svc runs on, as package.json `engines` says (a test keeps
// the two equal). Written out rather than read from package.json: this runs
// on every start.
const MINIMUM = [22, 18]
const [major, minor] = process.versions.node.split('.').map(Number)

if (major < MINIMUM[0] || (major === MINIMUM[0] && minor < MINIMUM[1])) {
  process.stderr.write(
    `svc needs Node.js ${MINIMUM.join('.')} or later (this is Node ${process.version}).\n` +
      'Install Node 24 LTS from https://nodejs.org, or with a version manager: `nvm install 24`, `fnm install 24` or `volta install node@24`.\n',
  )
  process.exitCode = 1
} else {
  // Built-ins come from process.getBuiltinModule() rather than `import`: an
  // import of node:fs builds an ES module facade that reads every export,
  // fs.promises included, and that loads some thirty more built-in modules
  // (streams, readline) on every start.
  const { existsSync } = process.getBuiltinModule('node:fs')

  // Node's compile cache keeps compiled modules, and from a checkout their
  // type-stripped form, between runs. It is turned on before the first
  // module of the CLI loads: stripping a TypeScript file would otherwise load
  // Node's TypeScript transformer (a WebAssembly module) on every start.
  process.getBuiltinModule('node:module').enableCompileCache?.()

  const source = new URL('../src/cli/main.ts', import.meta.url)
  const built = new URL('../dist/cli.mjs', import.meta.url)

  // Node strips TypeScript types by default from 22.18 and 23.6 on; before
  // that `process.features.typescript` is false or absent.
  if (existsSync(source) && process.features.typescript) {
    await import(source.href)
  } else if (existsSync(built)) {
    await import(built.href)
  } else if (existsSync(source)) {
    process.stderr.write(
      `svc runs from its TypeScript sources, which needs Node 22.18 or later (this is Node ${process.version}).\n` +
        'Run `npm install` in the repository (it installs Node 24 for npm scripts and npx), then `npx svc <command>`;\n' +
        'or build dist/ with `npm run build`.\n',
    )
    process.exitCode = 1
  } else {
    process.stderr.write(
      `This copy of svc (${process.getBuiltinModule('node:url').fileURLToPath(new URL('..', import.meta.url))}) has no dist/cli.mjs: it was packed without a build.\n` +
        'Install a published release (`npm install svcjs`), or pack it with `npm pack`, which builds dist/ first.\n',
    )
    process.exitCode = 1
  }
}

#!/usr/bin/env node
// The `svc` command. A checkout of the repository runs the CLI from its
// TypeScript sources, so the command always matches them and needs no build;
// the published package holds dist/ and no sources. This file is plain
// JavaScript so that any Node can read it and say what it needs.

// Built-ins come from process.getBuiltinModule() rather than `import`: an
// import of node:fs builds an ES module facade that reads every export,
// fs.promises included, and that loads some thirty more built-in modules
// (streams, readline) on every start. Node 22.3 and later have it; an older
// Node gets the message at the end of this file.
const { existsSync } = process.getBuiltinModule?.('node:fs') ?? { existsSync: () => false }
const module = process.getBuiltinModule?.('node:module') ?? {}

// Node's compile cache keeps compiled modules, and from a checkout their
// type-stripped form, between runs. It is turned on before the first
// TypeScript file loads: stripping that file would otherwise load Node's
// TypeScript transformer (a WebAssembly module) on every start.
module.enableCompileCache?.()

const source = new URL('../src/cli/main.ts', import.meta.url)
const built = new URL('../dist/cli.mjs', import.meta.url)

// Node strips TypeScript types by default from 22.18 and 23.6 on; before
// that `process.features.typescript` is false or absent.
if (existsSync(source) && process.features.typescript) {
  await import(source.href)
} else if (existsSync(built)) {
  await import(built.href)
} else {
  process.stderr.write(
    `svc runs from its TypeScript sources, which needs Node 22.18 or later (this is Node ${process.version}).\n` +
      'Run `npm install` in the repository (it installs Node 24 for npm scripts and npx), then `npx svc <command>`;\n' +
      'or build dist/ with `npm run build`.\n',
  )
  process.exitCode = 1
}

// The repository's tsconfig.json, read as tsc reads it: its compiler
// options without emitting, and the files it takes in, for the tests that
// compile sources or samples in a program of their own.
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

export function projectConfig(): { options: ts.CompilerOptions; fileNames: string[] } {
  const config = ts.getParsedCommandLineOfConfigFile(
    join(ROOT, 'tsconfig.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'))
      },
    },
  )
  if (!config) throw new Error('tsconfig.json could not be read')
  return { options: { ...config.options, noEmit: true }, fileNames: config.fileNames }
}

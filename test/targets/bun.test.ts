import { serverRuntimeSuites } from './_server-runtime.ts'

serverRuntimeSuites('bun')

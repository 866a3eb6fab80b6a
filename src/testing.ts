/** `svcjs/testing`: an app's tasks in unit tests, on a virtual clock (docs/testing.md). Node, Bun and Deno. */
import './runtime/node-version.ts'
export { createTestRuntime } from './testing/create.ts'
export {
  DEFAULT_START,
  type StepMock,
  type StepMockCall,
  type StillWaiting,
  type TestDeploy,
  type TestRun,
  type TestRuntime,
  type TestRuntimeOptions,
  type TestRunsQuery,
  type Duration,
  type Waiting,
} from './testing/types.ts'

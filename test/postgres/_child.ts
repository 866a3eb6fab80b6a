// The server processes the Postgres tests drive. The helper serves every
// store that processes share, so it lives beside the contract suites.
export { type ChildServer, startChild } from '../tasks/_child-server.ts'

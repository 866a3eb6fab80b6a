import type { FunctionMemory } from './types/routes.ts'

/** Every `FunctionMemory`, smallest first: the advisor compares sizes by their place here. */
export const FUNCTION_MEMORY: readonly FunctionMemory[] = ['1gb', '4gb', '6gb', '8gb', '12gb']

// Public exports of the task runtime.
export {}

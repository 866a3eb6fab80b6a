/**
 * The default `responseClass`: each response is built with the `Response`
 * global of the moment it is built, not of the moment the app was created.
 * Hosts replace that global when they start serving (@hono/node-server
 * installs its own), and a host tells a response from a plain value with
 * `instanceof` its current global: a response built with the class captured
 * earlier is taken for a value (h3 sends it as 200 "[object Response]").
 */
import type { ResponseClass } from '../http/types.ts'

export const GlobalResponse = class {
  constructor(body?: BodyInit | null, init?: ResponseInit) {
    // A constructor that returns an object makes `new` evaluate to that object.
    // biome-ignore lint/correctness/noConstructorReturn: returning the global's instance is the point
    return new globalThis.Response(body, init)
  }
} as unknown as ResponseClass

/**
 * The router an app's Hono instance matches with, which each host picks
 * (`HostParts.router`). A long-lived server takes Hono's default, which
 * compiles every route into one regular expression on the first request and
 * then matches in one test. A worker takes Hono's PatternRouter (the router
 * of `hono/tiny`): a few hundred bytes instead of several KiB in its bundle,
 * and nothing to compile as an isolate starts; it tests the routes one by
 * one, which for an app's handful of parameter routes costs little, and
 * fixed paths skip the router altogether (direct.ts). Hono's routers match
 * alike: the contract suites run on both.
 */
import type { Router } from 'hono/router'
import { PatternRouter } from 'hono/router/pattern-router'
import { RegExpRouter } from 'hono/router/reg-exp-router'
import { SmartRouter } from 'hono/router/smart-router'
import { TrieRouter } from 'hono/router/trie-router'

// biome-ignore lint/suspicious/noExplicitAny: Hono's handler and route types, as its routers take them
export type AppRouter = Router<[any, any]>

/** Makes a router for one app. */
export type RouterFactory = () => AppRouter

/** Hono's default: RegExpRouter, with TrieRouter for the routes it cannot compile. */
export const compiledRouter: RouterFactory = () => new SmartRouter({ routers: [new RegExpRouter(), new TrieRouter()] })

/** Hono's smallest router, for bundles that pay for their bytes. */
export const patternRouter: RouterFactory = () => new PatternRouter()

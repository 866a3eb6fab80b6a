/**
 * What the advisor knows about imported modules: Node built-ins, native
 * add-ons, and heavy packages with the least function memory they run well
 * in. The memory floors are conservative starting points for typical
 * payloads: browsers and image work want 4gb, ffmpeg 6gb, local model
 * inference 8gb.
 */
import { isBuiltin } from 'node:module'
import type { FunctionMemory } from '../runtime/types.ts'

export interface ModuleProfile {
  /** What the module does, for reasons ("a headless browser"). */
  label: string
  /** The least function memory to recommend, or null when memory is not the concern. */
  memory: FunctionMemory | null
  /** Ships a native binary or add-on: Node-only, never an edge worker. */
  native: boolean
}

const browser: ModuleProfile = { label: 'a headless browser', memory: '4gb', native: true }
const image: ModuleProfile = { label: 'a native image-processing module', memory: '4gb', native: true }
const media: ModuleProfile = { label: 'an ffmpeg media-processing wrapper', memory: '6gb', native: true }
const inference: ModuleProfile = { label: 'a local model-inference runtime', memory: '8gb', native: true }
const native: ModuleProfile = { label: 'a native add-on', memory: null, native: true }

const PROFILES: Record<string, ModuleProfile> = {
  sharp: image,
  canvas: image,
  '@napi-rs/canvas': image,
  'skia-canvas': image,
  puppeteer: browser,
  'puppeteer-core': browser,
  playwright: browser,
  'playwright-core': browser,
  '@sparticuz/chromium': browser,
  'chrome-aws-lambda': browser,
  'fluent-ffmpeg': media,
  'ffmpeg-static': media,
  'ffprobe-static': media,
  '@ffmpeg-installer/ffmpeg': media,
  'onnxruntime-node': inference,
  '@tensorflow/tfjs-node': inference,
  '@tensorflow/tfjs-node-gpu': inference,
  '@xenova/transformers': inference,
  '@huggingface/transformers': inference,
  'node-llama-cpp': inference,
  'tesseract.js': { label: 'an OCR engine', memory: '4gb', native: false },
  'better-sqlite3': native,
  sqlite3: native,
  bcrypt: native,
  argon2: native,
  '@node-rs/argon2': native,
  '@node-rs/bcrypt': native,
  'node-pty': native,
  re2: native,
}

/** The package a bare specifier names: `@scope/pkg/sub` gives `@scope/pkg`. */
export function packageName(specifier: string): string | null {
  if (specifier.startsWith('.') || specifier.startsWith('/') || specifier.startsWith('node:') || /^[a-z]+:/i.test(specifier)) return null
  const parts = specifier.split('/')
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]
}

export function moduleProfile(specifier: string): ModuleProfile | undefined {
  const name = packageName(specifier)
  return name === null ? undefined : PROFILES[name]
}

/** `node:fs`, `fs`, `fs/promises`: modules only Node (and Node-compatible hosts) provide. */
export function isNodeBuiltin(specifier: string): boolean {
  return specifier.startsWith('node:') || isBuiltin(specifier)
}

/** The bare name of a built-in, without `node:` (`node:fs/promises` gives `fs/promises`). */
export function builtinName(specifier: string): string {
  return specifier.startsWith('node:') ? specifier.slice(5) : specifier
}

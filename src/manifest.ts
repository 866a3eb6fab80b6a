/** `svc/manifest`: build-time scanning, static-literal parsing and normalization. Never imports app code. */
export {}

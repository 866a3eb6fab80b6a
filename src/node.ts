/** `svc/node`: the Node-only half (server, loaders). */
export {}

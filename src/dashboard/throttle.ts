/**
 * At most one run of `run` per `ms`, however often the returned function is
 * called: the first call runs at once, and calls inside the interval, or
 * while a run is still going, share one run after it, so the last change
 * is always shown. A run starts no sooner than `ms` after the one before,
 * and never beside it: a slow answer does not let two reads bunch up.
 */
export function throttle(run: () => Promise<void>, ms: number): () => void {
  let last = Number.NEGATIVE_INFINITY
  let timer: ReturnType<typeof setTimeout> | undefined
  let running = false
  let again = false
  const fire = async () => {
    timer = undefined
    running = true
    last = Date.now()
    try {
      await run()
    } finally {
      running = false
      if (again) {
        again = false
        schedule()
      }
    }
  }
  const schedule = () => {
    if (running) again = true
    if (running || timer !== undefined) return
    const wait = last + ms - Date.now()
    if (wait <= 0) void fire()
    else timer = setTimeout(fire, wait)
  }
  return schedule
}

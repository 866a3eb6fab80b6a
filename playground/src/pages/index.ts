// A hybrid page: rendered once, cached for 30 seconds, re-rendered in the background when stale.
export const page = { mode: 'hybrid', revalidate: 30, tags: ['home'] } as const

export default function render() {
  const time = new Date().toISOString()
  return `<!doctype html>
<html>
  <head><meta charset="utf-8"><title>svc playground</title></head>
  <body>
    <h1>svc playground</h1>
    <p>Rendered at ${time}. Purge it with <code>POST /__svc/revalidate {"tags":["home"]}</code>.</p>
    <ul>
      <li><a href="/api/greet?name=Ada">GET /api/greet?name=Ada</a></li>
      <li><a href="/chat.html">Chat room (hot route)</a></li>
      <li><a href="/order.html">An order that waits for its payment event, with its progress streamed live</a></li>
      <li>An approval that waits for a link to be visited: <code>POST /__tasks/approvals.request {"what":"deploy"}</code>, the link in the run's metadata</li>
      <li><a href="/__tasks">Task admin</a></li>
    </ul>
  </body>
</html>`
}

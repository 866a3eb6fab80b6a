// A JSON route: GET /api/hello
export function GET() {
  return { hello: 'world' }
}

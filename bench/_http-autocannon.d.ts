// The part of autocannon's API bench/http.ts uses (the package ships no types).
declare module 'autocannon' {
  namespace autocannon {
    interface Options {
      url: string
      connections?: number
      duration?: number
      pipelining?: number
    }
    interface Result {
      requests: { average: number; total: number }
      non2xx: number
      errors: number
    }
  }
  function autocannon(options: autocannon.Options): Promise<autocannon.Result>
  export default autocannon
}

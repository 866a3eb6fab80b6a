/**
 * What tags cost a trigger, for bench/store.ts (`--only search`): no-op
 * runs/s of runs triggered with three tags ÷ the same runs without, on a
 * fresh store each, in eleven rounds that alternate the two (a shared
 * machine's noise moved three rounds' ratio by a fifth). The ratio is the
 * median of each round's own ratio, the two measured one right after the
 * other, so a machine that gets busier or quieter over the rounds moves
 * both sides of each ratio alike; the medians of the rates are printed
 * beside it. The
 * tags are written with the run, a row each (SQLite: by the store, with
 * its batch's other runs' right before the batch commits; Postgres: by the
 * statement that inserts the run). Goal: the
 * untagged rate at most TAG_COST_GOAL × the tagged one.
 */
import { throughput } from './_store-measure.ts'
import { type OpenStore, RUNS, withRuntime } from './_store-svc.ts'

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

export const TAG_COST_GOAL = 1.1
const ROUNDS = 11
const TAGS = ['tenant:7', 'plan:pro', 'region:eu']

export interface TagCost {
  plain: number
  tagged: number
  /** The median of the rounds' untagged ÷ tagged. */
  ratio: number
}

const rate = (open: OpenStore, label: string, tags: string[] | undefined) =>
  withRuntime(open, label, (rt) =>
    throughput(RUNS, async () => {
      const run = await rt.trigger('noop', undefined, tags === undefined ? undefined : { tags })
      return () => rt.waitForRun(run.id)
    }),
  )

/** The medians of ROUNDS rounds of each, the two taking turns. */
export async function measureTagCost(open: OpenStore, label: string): Promise<TagCost> {
  await rate(open, `${label}_warm`, TAGS)
  const plain: number[] = []
  const tagged: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? [false, true] : [true, false]
    for (const withTags of order) {
      if (withTags) tagged.push(await rate(open, `${label}_tagged_${round}`, TAGS))
      else plain.push(await rate(open, `${label}_plain_${round}`, undefined))
    }
  }
  return { plain: median(plain), tagged: median(tagged), ratio: median(plain.map((rate, round) => rate / tagged[round])) }
}

export function printTagCost(name: string, cost: TagCost): void {
  const { ratio } = cost
  console.log(
    `${`${name}: no-op runs/s untagged ÷ with ${TAGS.length} tags`.padEnd(56)} ${Math.round(cost.plain).toLocaleString('en')}/s, ${Math.round(cost.tagged).toLocaleString('en')}/s (medians); median of ${ROUNDS} rounds' ratios ${ratio.toFixed(2)} x   goal <= ${TAG_COST_GOAL}  ${ratio <= TAG_COST_GOAL ? 'met' : 'MISSED'}`,
  )
}

// A booking that undoes itself: it books a flight and a hotel, each with an undo, then a car.
// With no car to be had ({"trip":"lisbon","car":false}) the run fails for good, and the hotel,
// then the flight, are given back: each undo is a step of its own (compensate:hotel,
// compensate:flight) that runs once. Start it with POST /__tasks/trips.book.
import * as v from 'valibot'
import type { TaskContext } from 'svcjs'

export const route = { kind: 'task', retries: 1 } as const

export const input = v.object({ trip: v.pipe(v.string(), v.minLength(1)), car: v.optional(v.boolean(), true) })

/** Stands for the providers' APIs; each answers with a booking reference. */
function reserve(what: string, trip: string): { ref: string } {
  return { ref: `${what}-${trip}-${crypto.randomUUID().slice(0, 8)}` }
}

export async function POST(ctx: TaskContext<{ trip: string; car: boolean }>) {
  const { trip } = ctx.input
  const flight = await ctx.step.run('flight', () => reserve('flight', trip), {
    compensate: (booked) => ctx.log.info(`Cancelled flight ${booked.ref}`),
  })
  const hotel = await ctx.step.run('hotel', () => reserve('hotel', trip), {
    compensate: (booked) => ctx.log.info(`Cancelled hotel ${booked.ref}`),
  })
  const car = await ctx.step.run('car', () => {
    if (!ctx.input.car) throw new Error(`No car is left for ${trip}`)
    return reserve('car', trip)
  })
  return { flight: flight.ref, hotel: hotel.ref, car: car.ref }
}

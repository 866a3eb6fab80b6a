/** The JSON data of a form's field (a signal's, an update's): `undefined` when blank, else its value, or why it is not JSON. */
export function jsonField(text: string): { value: unknown } | { problem: string } {
  if (text.trim() === '') return { value: undefined }
  try {
    return { value: JSON.parse(text) }
  } catch (error) {
    return { problem: `The data is not JSON: ${(error as Error).message}` }
  }
}

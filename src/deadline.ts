/**
 * The work's own outcome, or a rejection with `late()`'s error once `ms` have passed without it
 * settling. The timer is cleared either way; the error is made only if the deadline passes (an Error
 * captures a stack, which costs).
 */
export async function settleWithin<T>(work: Promise<T>, ms: number, late: () => Error): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(late()), ms);
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

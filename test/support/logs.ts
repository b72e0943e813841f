import { expect, vi } from "vitest";

/**
 * Runs `action` while holding back what the vault writes with console.error, then asserts that a
 * line matching `expected` was written. For tests whose request must fail with a logged 5xx: the
 * expected line is checked instead of printed, and any other error line still shows.
 */
export async function expectLoggedError<T>(expected: RegExp, action: () => Promise<T>): Promise<T> {
  const written: string[] = [];
  const original = console.error;
  const spy = vi.spyOn(console, "error").mockImplementation((...args: unknown[]) => {
    const line = args.map((arg) => (arg instanceof Error ? `${arg.name}: ${arg.message}` : String(arg))).join(" ");
    if (expected.test(line)) written.push(line);
    else original(...args);
  });
  try {
    const result = await action();
    expect(written, `expected a logged error matching ${expected}`).not.toEqual([]);
    return result;
  } finally {
    spy.mockRestore();
  }
}

/**
 * `target` with one method replaced; every other member is the target's own, its methods bound to
 * it (binding objects such as D1 refuse to be called with another `this`). For faking one failure,
 * or recording one kind of call, on an otherwise real binding.
 */
export function withMethod<T extends object, K extends keyof T>(target: T, name: K, replacement: T[K]): T {
  return new Proxy(target, {
    get(inner, property) {
      if (property === name) return replacement;
      const value = Reflect.get(inner, property);
      return typeof value === "function" ? value.bind(inner) : value;
    },
  });
}

import type { ElementReference } from "../protocol";
import { ElementPart, VaultElement } from "./element";

/**
 * A request as the page writes it, with elements where values go, split into what the page may
 * send a frame: the request's JSON with null in each element's place, and where those places are.
 */
export function describeRequest(request: unknown): { shape: unknown; references: ElementReference[]; elements: VaultElement[] } {
  const references: ElementReference[] = [];
  const elements = new Set<VaultElement>();
  const describe = (value: unknown, path: (string | number)[]): unknown => {
    if (value instanceof VaultElement || value instanceof ElementPart) {
      const element = value instanceof ElementPart ? value.element : value;
      elements.add(element);
      references.push({ path, element: element.id, ...(value instanceof ElementPart ? { part: value.part } : {}) });
      return null;
    }
    if (Array.isArray(value)) return value.map((item, index) => describe(item, [...path, index]));
    if (typeof value === "object" && value !== null) {
      if (typeof (value as { toJSON?: unknown }).toJSON === "function") return (value as { toJSON(): unknown }).toJSON();
      const shape: Record<string, unknown> = {};
      for (const [member, item] of Object.entries(value)) {
        // As JSON.stringify does: undefined and functions leave the member out.
        if (item !== undefined && typeof item !== "function") shape[member] = describe(item, [...path, member]);
      }
      return shape;
    }
    return value;
  };
  const shape = describe(request, []);
  return { shape, references, elements: [...elements] };
}

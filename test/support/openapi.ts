import { call } from "./harness";

/** One operation of the served OpenAPI document, as the route-wide suites (fuzz, sweep, bodies) see it. */
export interface DocumentedOperation {
  method: string;
  /** The documented path, with `{param}` placeholders. */
  path: string;
  /** Whether the operator key (not an API key) authenticates it. */
  operator: boolean;
  queryNames: string[];
  /** The media type of its request body, or null when it takes none. */
  bodyType: string | null;
  /** The members of its JSON body schema, when it has one. */
  bodyMembers: string[];
}

interface Document {
  paths: Record<string, Record<string, any>>;
  components?: { schemas?: Record<string, any> };
}

const METHODS = ["get", "post", "put", "patch", "delete"];

/** Every operation of the document the vault serves: a new route is in it without a new test. */
export async function documentedOperations(): Promise<DocumentedOperation[]> {
  const document = (await call<Document>("GET", "/openapi.json")).body;
  return Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, operation]) => ({
        method: method.toUpperCase(),
        path,
        operator: JSON.stringify(operation.security ?? []).includes("OperatorKey"),
        queryNames: (operation.parameters ?? [])
          .filter((parameter: { in: string }) => parameter.in === "query")
          .map((parameter: { name: string }) => parameter.name),
        bodyType: operation.requestBody ? Object.keys(operation.requestBody.content)[0]! : null,
        bodyMembers: bodyMembersOf(document, operation),
      })),
  );
}

function bodyMembersOf(document: Document, operation: any): string[] {
  const media = Object.values(operation.requestBody?.content ?? {})[0] as { schema?: any } | undefined;
  return membersOf(document, media?.schema);
}

/** An object schema's members; a body of several shapes (POST /tokens: a create or a conversion) has those of each. */
function membersOf(document: Document, schema: any): string[] {
  const resolved = schema?.$ref ? document.components?.schemas?.[schema.$ref.split("/").at(-1)] : schema;
  const alternatives: any[] = resolved?.anyOf ?? resolved?.oneOf ?? [];
  if (alternatives.length > 0) return [...new Set(alternatives.flatMap((alternative) => membersOf(document, alternative)))];
  return Object.keys(resolved?.properties ?? {});
}

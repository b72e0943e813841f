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
  let schema = media?.schema;
  if (schema?.$ref) schema = document.components?.schemas?.[schema.$ref.split("/").at(-1)];
  return Object.keys(schema?.properties ?? {});
}

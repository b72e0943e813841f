import type { ConfigurationElement, RequestParameter } from "../schema";

/** An official formula as shipped in this repository: its code is plain JavaScript (Node 16 CommonJS). */
export interface OfficialFormula {
  /** Fixed, so reactors of every tenant keep pointing at it across releases. */
  id: string;
  name: string;
  description: string;
  status: "verified" | "coming_soon";
  code: string;
  configuration: ConfigurationElement[];
  request_parameters: RequestParameter[];
}

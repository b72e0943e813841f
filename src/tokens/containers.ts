import { z } from "@hono/zod-openapi";
import { TOKENS } from "../limits";

/** `/segment/segment/`: letters, digits, `_` and `-`; compared and stored lower-cased. */
export const CONTAINER_PATTERN = /^\/(?:[A-Za-z0-9_-]+\/)+$/;
export const CONTAINER_MAX_LENGTH = TOKENS.containerMaxLength;

export const ContainerPath = z
  .string({ error: "must be a string" })
  .max(CONTAINER_MAX_LENGTH, `must be at most ${CONTAINER_MAX_LENGTH} characters`)
  .regex(CONTAINER_PATTERN, "must be a path like /segment/segment/ of letters, digits, _ and -")
  .transform((path) => path.toLowerCase());

/** A rule's container: any container path, or `/` for every container. */
export const RuleContainerPath = z.union([z.literal("/"), ContainerPath], {
  error: "must be / or a path like /segment/segment/ of letters, digits, _ and -",
});

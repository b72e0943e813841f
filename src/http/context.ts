import type { Principal } from "../auth/access";
import type { Bindings, Config } from "../env";

export type AppEnv = {
  Bindings: Bindings;
  Variables: { config: Config; principal: Principal; traceId: string };
};

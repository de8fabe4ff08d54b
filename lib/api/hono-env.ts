import type { Hooklane } from "../hooklane.ts";
import type { Principal } from "../auth/jwt.ts";

/** What every request carries: the product's services and, once authenticated, the caller. */
export interface HooklaneEnv {
  Variables: {
    hooklane: Hooklane;
    principal: Principal;
  };
}

// Prints an HS256 bearer token signed with AUTH_JWT_SECRET (or the development secret).
// npm run token -- --account acc_123 [--admin | --support] [--sub user]
import { parseArgs } from "node:util";
import { mintToken } from "../lib/auth/jwt.ts";
import { config } from "../lib/config/env.ts";

const usage = "usage: npm run token -- --account <account id> [--admin | --support] [--sub <subject>]";

let values;
try {
  ({ values } = parseArgs({
    options: {
      account: { type: "string" },
      admin: { type: "boolean", default: false },
      support: { type: "boolean", default: false },
      sub: { type: "string", default: "dev" },
    },
  }));
} catch (error) {
  console.error(`${(error as Error).message}\n${usage}`);
  process.exit(2);
}
if (!values.account) {
  console.error(`--account is required\n${usage}`);
  process.exit(2);
}

const { jwtSecret, jwtIssuer, jwtAudience } = config();
if (!jwtSecret) {
  console.error("AUTH_JWT_SECRET is not set (production uses AUTH_JWKS_URL; mint tokens with your identity provider)");
  process.exit(1);
}
// The server checks iss and aud when they are configured: carry the same ones.
const principal = { sub: values.sub, account: values.account, admin: values.admin, support: values.support };
console.log(await mintToken(jwtSecret, principal, { issuer: jwtIssuer, audience: jwtAudience }));

/** Consumer sessions: the session request, the account and wallet views, the routes. */
import { z } from "zod";
import { M } from "../../http/messages.ts";
import { isAddress } from "../../chain/address.ts";

/** Only an omitted walletAddress makes a managed wallet; "" or null is an invalid address. */
export const sessionBody = z.object({
  walletAddress: z.string({ error: M.consumerAddress }).refine(isAddress, M.consumerAddress)
    .optional().describe("An external wallet to connect; omitted: a new managed wallet"),
});

export const iso = z.string().describe("ISO 8601 timestamp");

export const consumerAccount = z.object({
  id: z.string(),
  walletAddress: z.string(),
  walletType: z.enum(["MANAGED", "EXTERNAL"]),
  lastSeenAt: iso,
}).meta({ id: "ConsumerAccount" });

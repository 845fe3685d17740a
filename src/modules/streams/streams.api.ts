/**
 * /api/payments/stream: create, list, stop, withdraw. `x-api-key` (merchant or secret key; the
 * key's prefix picks the chain, and only that chain's streams are seen or acted on), the stream
 * rate-limit group, `Idempotency-Key` on the writes.
 */
import { Hono } from "hono";
import type { Deps } from "../../deps.ts";
import { presentQuery, readJsonObject } from "../../http/body.ts";
import { parseOrThrow } from "../../http/contract.ts";
import { type AuthEnv, guard, merchantOf, profileOf } from "../../http/auth.ts";
import { idempotent } from "../../http/idempotency.ts";
import { ApiError } from "../../http/errors.ts";
import { M } from "../../http/messages.ts";
import { usdcToNumber } from "../../money.ts";
import * as service from "./streams.service.ts";
import { stopMessage } from "./streams.rules.ts";
import {
  createStreamBody,
  listStreamsQuery,
  stopStreamBody,
  STREAM_EXAMPLE,
  STREAM_REQUIRED,
  withdrawStreamBody,
} from "./streams.schemas.ts";

export function streamsApi(deps: Deps) {
  const app = new Hono<AuthEnv>();
  const credentials = (write: boolean) =>
    guard(deps, {
      accept: ["apiKey"],
      keyKinds: ["merchant", "secret"],
      scope: "streams",
      group: "streams",
      write,
    });
  const read = credentials(false);
  const write = credentials(true);
  const once = idempotent(deps);
  const create = createStreamBody(deps.config.WEBHOOK_TARGETS);

  app.post("/api/payments/stream", write, once, async (c) => {
    const body = await readJsonObject(c);
    if (STREAM_REQUIRED.some((f) => body[f] === undefined || body[f] === null || body[f] === "")) {
      throw new ApiError(400, M.streamFieldsRequired, {
        extra: { hint: { example: STREAM_EXAMPLE } },
      });
    }
    const input = parseOrThrow(create, body);
    const r = await service.createStream(
      deps,
      merchantOf(c),
      profileOf(c),
      input,
      c.req.header("idempotency-key"),
    );
    const s = r.row;
    const view = service.streamView(deps, s, deps.clock.now());
    return c.json({
      success: true,
      reference: s.reference,
      stream: {
        reference: s.reference,
        status: "ACTIVE" as const,
        senderSCA: view.senderSCA,
        receiverSCA: view.receiverSCA,
        ratePerSecond: view.ratePerSecond,
        totalDeposited: view.totalDeposited,
        totalStreamed: 0 as const,
        currency: "USDC" as const,
        contractAddress: view.contractAddress,
      },
      txHash: s.txHash,
      explorerUrl: r.explorerUrl,
      estimatedDurationSeconds: r.estimatedDurationSeconds,
      estimatedEndTime: r.estimatedEndTime.toISOString(),
      message:
        `Streaming ${view.ratePerSecond} USDC per second to ${view.receiverSCA} until ${view.totalDeposited} USDC is streamed.`,
      nextSteps: {
        stop:
          `POST /api/payments/stream/stop { "reference": "${s.reference}", "callerSCA": "${view.senderSCA}" }`,
        withdraw:
          `POST /api/payments/stream/withdraw { "reference": "${s.reference}", "receiverSCA": "${view.receiverSCA}" }`,
        status: `GET /api/payments/stream?reference=${s.reference}`,
      },
    });
  });

  app.get("/api/payments/stream", read, async (c) => {
    const q = parseOrThrow(listStreamsQuery, presentQuery(c));
    const r = await service.listStreams(deps, merchantOf(c).id, profileOf(c), q);
    return c.json({ success: true, ...r });
  });

  app.post("/api/payments/stream/stop", write, once, async (c) => {
    const input = parseOrThrow(stopStreamBody, await readJsonObject(c));
    const r = await service.stopStream(deps, merchantOf(c), profileOf(c), input);
    const totalStreamed = usdcToNumber(r.totalStreamed);
    const refunded = usdcToNumber(r.refundedToSender);
    return c.json({
      success: true,
      stream: {
        reference: r.row.reference,
        status: "STOPPED" as const,
        totalStreamed,
        stoppedAt: r.row.stoppedAt!.toISOString(),
      },
      txHash: r.txHash,
      explorerUrl: r.explorerUrl,
      totalStreamed,
      refundedToSender: refunded,
      message: stopMessage(r),
    });
  });

  app.post("/api/payments/stream/withdraw", write, once, async (c) => {
    const input = parseOrThrow(withdrawStreamBody, await readJsonObject(c));
    const r = await service.withdrawStream(
      deps,
      merchantOf(c),
      profileOf(c),
      input,
      c.req.header("idempotency-key"),
    );
    return c.json({
      success: true,
      reference: r.reference,
      amountWithdrawn: usdcToNumber(r.amountWithdrawn),
      totalStreamed: usdcToNumber(r.totalStreamed),
      txHash: r.txHash,
      explorerUrl: r.explorerUrl,
    });
  });

  return app;
}

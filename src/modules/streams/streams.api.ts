/**
 * /api/payments/stream: create, list, stop, withdraw. `x-api-key` (merchant or secret key; the
 * key's prefix picks the chain, and only that chain's streams are seen or acted on), the stream
 * rate-limit group, `Idempotency-Key` on the writes.
 */
import { errors } from "../../http/contract.ts";
import { defineRoute, type RouteAuth } from "../../http/route.ts";
import { ApiError } from "../../http/errors.ts";
import { M } from "../../http/messages.ts";
import { usdcToNumber } from "../../money.ts";
import * as service from "./streams.service.ts";
import { stopMessage } from "./streams.rules.ts";
import {
  createError,
  createResponse,
  createStreamBody,
  listResponse,
  listStreamsQuery,
  stopResponse,
  stopStreamBody,
  STREAM_EXAMPLE,
  STREAM_REQUIRED,
  withdrawResponse,
  withdrawStreamBody,
} from "./streams.schemas.ts";

const credentials = (write: boolean): RouteAuth => ({
  accept: ["apiKey"],
  keyKinds: ["merchant", "secret"],
  scope: "streams",
  group: "streams",
  write,
});
const read = credentials(false);
const write = credentials(true);
const tag = "Streams";

export const streamsRoutes = [
  defineRoute({
    method: "post",
    path: "/api/payments/stream",
    summary: "Lock USDC from a wallet you control in a per-second stream",
    tag,
    auth: write,
    idempotent: true,
    body: createStreamBody("any"),
    bodyExample: STREAM_EXAMPLE,
    responses: {
      200: { description: "Locked on chain; the stream is ACTIVE", schema: createResponse },
      400: {
        description: "Missing or malformed fields (among them a receiver that is the zero " +
          "address or the sender, and a deposit below one second's rate), or too little USDC " +
          "in the sender, less its creates still on their way (then `balance`)",
        schema: createError,
      },
      ...errors([401, 403, 408, 409, 429, 500, 502]),
    },
    bodyFor: (deps) => createStreamBody(deps.config.WEBHOOK_TARGETS),
    // The spec names every missing field at once, with an example, before any field's own check.
    checks: [async (x) => {
      const body = await x.json();
      if (
        STREAM_REQUIRED.some((f) => body[f] === undefined || body[f] === null || body[f] === "")
      ) {
        throw new ApiError(400, M.streamFieldsRequired, {
          extra: { hint: { example: STREAM_EXAMPLE } },
        });
      }
    }],
    handler: async (x) => {
      const r = await service.createStream(x.deps, x.merchant, x.profile, x.body, x.idempotencyKey);
      const s = r.row;
      const view = service.streamView(x.deps, s, x.deps.clock.now());
      return {
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
      };
    },
    fuzz: {
      sample: {
        senderSCA: "$wallet",
        receiverSCA: "$dead",
        ratePerSecond: "0.000001",
        totalDeposited: "1",
      },
      extra: ["balance"],
      hintObject: true,
    },
  }),
  defineRoute({
    method: "get",
    path: "/api/payments/stream",
    summary: "Streams with derived values and metrics",
    tag,
    auth: read,
    query: listStreamsQuery,
    responses: {
      200: { description: "Streams", schema: listResponse },
      ...errors([400, 401, 403, 429]),
    },
    handler: async (x) => await service.listStreams(x.deps, x.merchant.id, x.profile, x.query),
    fuzz: {},
  }),
  defineRoute({
    method: "post",
    path: "/api/payments/stream/stop",
    summary: "Stop a stream: the receiver gets what accrued, the sender the rest",
    tag,
    auth: write,
    idempotent: true,
    body: stopStreamBody,
    bodyExample: { reference: "stream_m1abc_x7k2", callerSCA: STREAM_EXAMPLE.senderSCA },
    responses: {
      200: { description: "Stopped on chain", schema: stopResponse },
      ...errors([400, 401, 403, 404, 408, 409, 429, 500, 502]),
    },
    handler: async (x) => {
      const r = await service.stopStream(x.deps, x.merchant, x.profile, x.body);
      const totalStreamed = usdcToNumber(r.totalStreamed);
      return {
        stream: {
          reference: r.row.reference,
          status: "STOPPED" as const,
          totalStreamed,
          stoppedAt: r.row.stoppedAt!.toISOString(),
        },
        txHash: r.txHash,
        explorerUrl: r.explorerUrl,
        totalStreamed,
        refundedToSender: usdcToNumber(r.refundedToSender),
        message: stopMessage(r),
      };
    },
    fuzz: {
      sample: { reference: "stream_abc_def", callerSCA: "$wallet" },
      runsDivisor: 3,
    },
  }),
  defineRoute({
    method: "post",
    path: "/api/payments/stream/withdraw",
    summary: "Pay the receiver (a wallet you control) what has accrued",
    tag,
    auth: write,
    idempotent: true,
    body: withdrawStreamBody,
    bodyExample: { reference: "stream_m1abc_x7k2", receiverSCA: STREAM_EXAMPLE.receiverSCA },
    responses: {
      200: { description: "Withdrawn on chain", schema: withdrawResponse },
      ...errors([400, 401, 403, 404, 408, 409, 429, 500, 502]),
    },
    handler: async (x) => {
      const r = await service.withdrawStream(
        x.deps,
        x.merchant,
        x.profile,
        x.body,
        x.idempotencyKey,
      );
      return {
        reference: r.reference,
        amountWithdrawn: usdcToNumber(r.amountWithdrawn),
        totalStreamed: usdcToNumber(r.totalStreamed),
        txHash: r.txHash,
        explorerUrl: r.explorerUrl,
      };
    },
    fuzz: {
      sample: { reference: "stream_abc_def", receiverSCA: "$wallet" },
      runsDivisor: 3,
    },
  }),
];

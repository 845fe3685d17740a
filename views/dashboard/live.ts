/**
 * The attributes of a dashboard live panel (views/assets/live.js): refreshed through its hx-get
 * when /dashboard/events announces a change of the named kind (and reference), polled every
 * `pollSeconds` only while the event stream is unavailable.
 */
export const DASHBOARD_EVENTS = "/dashboard/events";

export function liveAttrs(
  o: { events: string; pollSeconds: number; reference?: string },
): Record<string, string> {
  return {
    "hx-trigger": "live:refresh",
    "data-live-stream": DASHBOARD_EVENTS,
    "data-live-event": o.events,
    "data-live-poll": String(o.pollSeconds),
    ...(o.reference ? { "data-live-ref": o.reference } : {}),
  };
}

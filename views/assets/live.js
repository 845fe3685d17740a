// Live panels: an element with data-live-stream="<url>" is refreshed (the htmx event
// `live:refresh`, its hx-trigger) when the server-sent event stream at that URL announces a
// change. One EventSource per URL, shared by the page's panels, opened and closed as panels come
// and go (htmx swaps). When the stream fails or the browser has no EventSource, the panels poll:
// `live:refresh` every data-live-poll seconds, until the stream is open again.
//   data-live-event  the event names that concern the panel (space separated; default: all)
//   data-live-ref    only events of this reference
//   data-status      an event of this status changes nothing (the checkout's status block)
(() => {
  "use strict";
  const EVENTS = ["status", "payment", "stream", "payroll", "escrow"];
  const streams = new Map();

  function panels(url) {
    return [...document.querySelectorAll("[data-live-stream]")]
      .filter((el) => el.dataset.liveStream === url);
  }

  function concerns(el, ev) {
    if (!ev) return true;
    const want = el.dataset.liveEvent;
    if (want && !want.split(/\s+/).includes(ev.type)) return false;
    let body = {};
    try {
      body = JSON.parse(ev.data);
    } catch { /* not JSON: concerns every panel */ }
    if (el.dataset.liveRef && body.reference !== el.dataset.liveRef) return false;
    // The checkout's status block: an event of the status it shows changes nothing.
    return !(ev.type === "status" && body.status === el.dataset.status);
  }

  // A burst of events (a payroll batch's chunks) refreshes a panel at once, then at most every
  // THROTTLE_MS, the last one always.
  const THROTTLE_MS = 250;
  let last = 0;
  let trailing = null;
  let pending = [];

  function refresh(url, ev) {
    pending.push({ url, ev });
    const wait = last + THROTTLE_MS - Date.now();
    if (wait <= 0) return flush();
    trailing ??= setTimeout(flush, wait);
  }

  // A trigger the panel would drop: htmx drops one while the panel's request is in flight (that
  // answer may predate the event), and a panel just swapped in (htmx-added) has no listener until
  // htmx processes it at the settle, htmx.config.defaultSettleDelay later. Either is asked again
  // once htmx is done with it.
  function busy(el) {
    return el.classList.contains("htmx-request") || el.classList.contains("htmx-added");
  }

  // The panels are looked up now: a swap may have replaced the one the event found.
  function flush() {
    clearTimeout(trailing);
    trailing = null;
    last = Date.now();
    const due = new Set();
    for (const { url, ev } of pending) {
      for (const el of panels(url)) {
        if (!concerns(el, ev)) continue;
        if (busy(el)) {
          deferred.push({ url, ev });
          el.dispatchEvent(new CustomEvent("live:deferred", { bubbles: true }));
        } else due.add(el);
      }
    }
    pending = [];
    for (const el of due) htmx.trigger(el, "live:refresh");
  }

  // After a request's answer (htmx:afterRequest) and after new content is processed (htmx:load).
  let deferred = [];
  function retry() {
    if (!deferred.length) return;
    const again = deferred;
    deferred = [];
    setTimeout(() => {
      for (const { url, ev } of again) refresh(url, ev);
    }, 0);
  }
  document.addEventListener("htmx:afterRequest", retry);
  document.addEventListener("htmx:load", retry);

  function setState(url, state) {
    const entry = streams.get(url);
    if (entry) entry.state = state;
    for (const el of panels(url)) el.dataset.liveState = state;
  }

  function poll(entry, url) {
    setState(url, "polling");
    if (entry.timer) return;
    const seconds = Math.min(
      ...panels(url).map((el) => Number(el.dataset.livePoll) || 4),
    );
    entry.timer = setInterval(() => refresh(url), Math.max(1, seconds) * 1000);
  }

  function unpoll(entry) {
    clearInterval(entry.timer);
    entry.timer = null;
  }

  function connect(url) {
    const entry = { source: null, timer: null, state: "connecting" };
    streams.set(url, entry);
    setState(url, "connecting");
    if (typeof EventSource !== "function") return poll(entry, url);
    const source = new EventSource(url);
    entry.source = source;
    source.onopen = () => {
      unpoll(entry);
      setState(url, "streaming");
      // Whatever changed while the stream was not open (page load, a reconnect).
      refresh(url);
    };
    // Reconnecting (the browser retries) or closed for good (an error answer): poll meanwhile.
    source.onerror = () => poll(entry, url);
    for (const name of EVENTS) {
      source.addEventListener(name, (e) => refresh(url, { type: name, data: e.data }));
    }
    // The server's database listener reconnected: events may have been missed.
    source.addEventListener("resync", () => refresh(url));
  }

  function scan() {
    const urls = new Set(
      [...document.querySelectorAll("[data-live-stream]")].map((el) => el.dataset.liveStream),
    );
    for (const url of urls) {
      const entry = streams.get(url);
      if (!entry) connect(url);
      else setState(url, entry.state);
    }
    for (const [url, entry] of streams) {
      if (urls.has(url)) continue;
      entry.source?.close();
      unpoll(entry);
      streams.delete(url);
    }
  }

  document.addEventListener("htmx:load", scan);
  document.addEventListener("htmx:afterSettle", scan);
  addEventListener("pagehide", () => {
    for (const entry of streams.values()) entry.source?.close();
  });
})();

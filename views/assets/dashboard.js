// The merchant dashboard's script: confirmation dialogs for hx-confirm, copy buttons, focus
// after swaps, and linking an external wallet (EIP-1193 + Sign-In with Ethereum). Plain
// browser JavaScript, loaded from our origin under a CSP that allows no inline script.
(() => {
  "use strict";

  const app = () => document.querySelector(".app");
  const text = (name) => app()?.dataset[`text${name}`] ?? "";
  const csrf = () => document.querySelector('meta[name="csrf-token"]')?.content ?? "";
  // Shows a message in a status element (a notice of `kind`: "error", "ok", …).
  const sayIn = (status) => (message, kind) => {
    status.textContent = message;
    status.className = `notice ${kind}`;
    status.hidden = false;
  };

  // What a wallet step's failure says: the payer said no (EIP-1193 4001), the request to us did
  // not get through, or the wallet's own message.
  const walletErrorText = (err) =>
    err && err.code === 4001
      ? text("WalletRejected")
      : err instanceof TypeError
      ? text("RequestFailed")
      : (err && err.message) || text("WalletFailed");

  // hx-confirm opens our <dialog> instead of window.confirm.
  document.addEventListener("htmx:confirm", (event) => {
    const question = event.detail.question;
    const dialog = document.getElementById("confirm-dialog");
    if (!question || !dialog || typeof dialog.showModal !== "function") return;
    event.preventDefault();
    dialog.querySelector("#confirm-text").textContent = question;
    dialog.returnValue = "";
    dialog.addEventListener("close", () => {
      if (dialog.returnValue === "ok") event.detail.issueRequest(true);
    }, { once: true });
    dialog.showModal();
  });

  // Copy buttons: data-copy names the input whose value is copied.
  document.addEventListener("click", async (event) => {
    const button = event.target.closest("[data-copy]");
    if (!button) return;
    const source = document.getElementById(button.dataset.copy);
    if (!source) return;
    const value = "value" in source ? source.value : source.textContent;
    let done = false;
    try {
      await navigator.clipboard.writeText(value);
      done = true;
    } catch {
      source.select?.();
      done = document.execCommand?.("copy") ?? false;
    }
    const label = button.firstChild;
    if (done && label && label.nodeType === Node.TEXT_NODE) {
      label.textContent = "Copied";
      setTimeout(() => (label.textContent = "Copy"), 2000);
    }
  });

  // After a section is swapped in, move focus to what changed (a notice, a key, an error).
  document.addEventListener("htmx:afterSwap", (event) => {
    const target = event.detail.target;
    if (!target || !(target.id === "main" || target.closest?.("#main"))) return;
    const focus = target.matches?.("[data-focus]")
      ? target
      : ["[data-focus]", "[aria-invalid='true']", "h1"]
        .map((selector) => target.querySelector?.(selector)).find(Boolean);
    if (focus) {
      if (
        !focus.hasAttribute("tabindex") && !/^(INPUT|SELECT|TEXTAREA|BUTTON|A)$/.test(focus.tagName)
      ) {
        focus.setAttribute("tabindex", "-1");
      }
      focus.focus();
    }
  });

  // A panel replaced in place (hx-swap="outerHTML": a replay's answer, appended rows): the
  // element the person used is gone, so focus its notice, or the first of the new rows.
  // Polled regions carry neither, so an update never moves focus.
  document.addEventListener("htmx:afterSwap", (event) => {
    const fresh = event.target;
    const old = event.detail.target;
    if (!(fresh instanceof Element) || !fresh.isConnected || !old || old.isConnected) return;
    let focus = fresh.matches("[data-focus]") ? fresh : fresh.querySelector("[data-focus]");
    if (!focus && fresh.matches("[data-first-new]")) {
      fresh.removeAttribute("data-first-new");
      focus = fresh.querySelector("a, button");
    }
    if (!focus) return;
    if (!focus.hasAttribute("tabindex") && !/^(A|BUTTON|INPUT|SELECT)$/.test(focus.tagName)) {
      focus.setAttribute("tabindex", "-1");
    }
    focus.focus();
  });

  // A request that never reached the server.
  document.addEventListener("htmx:sendError", () => {
    const flash = document.getElementById("flash");
    if (!flash) return;
    flash.textContent = text("RequestFailed");
    flash.hidden = false;
  });
  document.addEventListener("htmx:beforeRequest", () => {
    const flash = document.getElementById("flash");
    if (flash) flash.hidden = true;
  });

  // ---- what was typed, kept when the session ended -----------------------------------------
  // A form sent after the session ended (logged out in another tab, or expired) is answered by
  // the login page. What was typed goes into this tab's sessionStorage as the form is sent, and
  // is put back in the same form when its page is shown again (after the login); a form the
  // server answered drops it. Never a password or a hidden field (a form token, a request key).
  // Drafts by page and form, so another form sent meanwhile (the login's) keeps this one's.
  const DRAFTS = "dashboard-drafts";
  const keepable = (el) =>
    el.name && !el.disabled &&
    !["password", "hidden", "file", "submit", "button", "reset"].includes(el.type);
  const formPath = (form) =>
    form.getAttribute("hx-post") || form.querySelector("[hx-post]")?.getAttribute("hx-post") ||
    form.getAttribute("action") || "";
  const draftKey = (form) => `${location.pathname} ${formPath(form)}`;
  const drafts = {
    read() {
      try {
        return JSON.parse(globalThis.sessionStorage?.getItem(DRAFTS) ?? "{}") ?? {};
      } catch {
        return {};
      }
    },
    write(all) {
      try {
        if (Object.keys(all).length) sessionStorage.setItem(DRAFTS, JSON.stringify(all));
        else sessionStorage.removeItem(DRAFTS);
      } catch { /* no storage: nothing kept */ }
    },
  };
  document.addEventListener("htmx:beforeRequest", (event) => {
    const form = event.detail.elt?.closest?.("form");
    if (!form || event.detail.requestConfig?.verb === "get") return;
    const values = {};
    for (const el of form.elements) {
      if (!keepable(el)) continue;
      if (el.type === "checkbox") {
        values[el.name] = [...(values[el.name] ?? []), ...(el.checked ? [el.value] : [])];
      } else if (el.type === "radio") {
        if (el.checked) values[el.name] = el.value;
      } else values[el.name] = el.value;
    }
    if (!Object.keys(values).length) return;
    drafts.write({ ...drafts.read(), [draftKey(form)]: values });
  });
  document.addEventListener("htmx:afterRequest", (event) => {
    const form = event.detail.elt?.closest?.("form");
    if (!form || event.detail.xhr?.status === 401) return;
    const all = drafts.read();
    if (!(draftKey(form) in all)) return;
    delete all[draftKey(form)];
    drafts.write(all);
  });
  const restoreDraft = () => {
    const all = drafts.read();
    if (!Object.keys(all).length || !app()) return;
    let restored = false;
    for (const form of document.querySelectorAll("form")) {
      const values = all[draftKey(form)];
      if (!values) continue;
      for (const el of form.elements) {
        if (!keepable(el) || !(el.name in values)) continue;
        const kept = values[el.name];
        if (el.type === "checkbox") el.checked = [].concat(kept).includes(el.value);
        else if (el.type === "radio") el.checked = el.value === kept;
        else el.value = kept;
      }
      delete all[draftKey(form)];
      form.closest("details")?.setAttribute("open", "");
      restored = true;
    }
    if (!restored) return;
    drafts.write(all);
    const flash = document.getElementById("flash");
    if (flash && text("DraftRestored")) {
      flash.textContent = text("DraftRestored");
      flash.hidden = false;
    }
  };
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", restoreDraft);
  } else restoreDraft();
  document.addEventListener("htmx:load", restoreDraft);

  // ---- linking an external wallet ----------------------------------------------------------

  document.addEventListener("click", (event) => {
    const button = event.target.closest("[data-wallet-link]");
    if (button) linkWallet(button);
  });

  function utf8ToHex(s) {
    return "0x" + Array.from(new TextEncoder().encode(s), (b) => b.toString(16).padStart(2, "0"))
      .join("");
  }

  async function linkWallet(button) {
    const box = button.closest("[data-wallet]");
    const status = box.querySelector("[data-wallet-status]");
    const say = sayIn(status);
    const eth = globalThis.ethereum;
    if (!eth || typeof eth.request !== "function") return say(text("WalletMissing"), "error");

    button.disabled = true;
    button.classList.add("htmx-request");
    status.hidden = true;
    try {
      const accounts = await eth.request({ method: "eth_requestAccounts" });
      const address = Array.isArray(accounts) ? accounts[0] : undefined;
      if (!address) return say(text("WalletFailed"), "error");

      const res = await fetch(box.dataset.challengeUrl, {
        method: "POST",
        credentials: "same-origin",
        headers: {
          "Content-Type": "application/x-www-form-urlencoded",
          "X-CSRF-Token": csrf(),
          "HX-Request": "true",
          "HX-Current-URL": location.href,
        },
        body: new URLSearchParams({ address }),
      });
      const redirect = res.headers.get("HX-Redirect");
      if (redirect) {
        location.href = redirect;
        return;
      }
      // JSON from the route; a refusal before it (CSRF, rate limit) is an HTML fragment.
      const body = await res.text();
      let data;
      try {
        data = JSON.parse(body);
      } catch {
        data = {
          error: new DOMParser().parseFromString(body, "text/html").body.textContent.trim(),
        };
      }
      if (!res.ok || typeof data.message !== "string") {
        return say(data.error || text("WalletFailed"), "error");
      }

      const signature = await eth.request({
        method: "personal_sign",
        params: [utf8ToHex(data.message), address],
      });
      const walletKind = box.querySelector("[name=walletKind]")?.value ?? "EXTENSION_WALLET";
      await htmx.ajax("POST", box.dataset.linkUrl, {
        target: "#main",
        swap: "innerHTML",
        values: { address, message: data.message, signature, walletKind },
        headers: { "X-CSRF-Token": csrf() },
      });
    } catch (err) {
      say(walletErrorText(err), "error");
    } finally {
      button.disabled = false;
      button.classList.remove("htmx-request");
    }
  }

  // ---- payroll: a sign request sent from the browser wallet ------------------------------

  document.addEventListener("click", (event) => {
    const button = event.target.closest("[data-sign-send]");
    if (button) sendSignRequest(button);
  });

  const pad32 = (hex) => hex.replace(/^0x/, "").toLowerCase().padStart(64, "0");

  async function sendSignRequest(button) {
    const box = button.closest("[data-sign-requests]");
    const status = box.querySelector("[data-sign-status]");
    const say = sayIn(status);
    const eth = globalThis.ethereum;
    if (!eth || typeof eth.request !== "function") return say(text("WalletMissing"), "error");
    const d = button.dataset;
    button.disabled = true;
    button.classList.add("htmx-request");
    status.hidden = true;
    try {
      const accounts = await eth.request({ method: "eth_requestAccounts" });
      const from = Array.isArray(accounts) ? accounts[0] : undefined;
      if (!from) return say(text("WalletFailed"), "error");
      const chainId = await eth.request({ method: "eth_chainId" });
      if (String(chainId).toLowerCase() !== d.chainId.toLowerCase()) {
        await eth.request({
          method: "wallet_switchEthereumChain",
          params: [{ chainId: d.chainId }],
        });
      }
      // ERC-20 transfer(to, amount): selector a9059cbb, then the two 32-byte arguments.
      const data = "0xa9059cbb" + pad32(d.to) + pad32(BigInt(d.amount).toString(16));
      const hash = await eth.request({
        method: "eth_sendTransaction",
        params: [{ from, to: d.token, data }],
      });
      // Report it once mined (bounded: the server checks the receipt and says so if missing).
      for (let i = 0; i < 60; i++) {
        const receipt = await eth.request({ method: "eth_getTransactionReceipt", params: [hash] });
        if (receipt) break;
        await new Promise((r) => setTimeout(r, 500));
      }
      await htmx.ajax("POST", d.submitUrl, {
        target: "#main",
        swap: "innerHTML",
        values: { txHash: hash },
        headers: { "X-CSRF-Token": csrf() },
      });
    } catch (err) {
      say(walletErrorText(err), "error");
    } finally {
      button.disabled = false;
      button.classList.remove("htmx-request");
    }
  }

  // ---- x402: a withdrawal signed by the external payout wallet -----------------------------

  document.addEventListener("click", (event) => {
    const button = event.target.closest("[data-x402-sign]");
    if (button) signWithdrawal(button);
  });

  // "1.5" → 1500000n: USDC's six decimals, in integers (never a float).
  function usdcUnits(input) {
    const m = /^(\d{1,12})(?:\.(\d{1,6}))?$/.exec(input.trim());
    return m ? BigInt(m[1]) * 1000000n + BigInt((m[2] ?? "").padEnd(6, "0")) : null;
  }

  const randomBytes32 = () =>
    "0x" +
    Array.from(crypto.getRandomValues(new Uint8Array(32)), (b) => b.toString(16).padStart(2, "0"))
      .join("");

  async function signWithdrawal(button) {
    const box = button.closest("[data-x402-signed]");
    const status = box.querySelector("[data-x402-signed-status]");
    const say = sayIn(status);
    const eth = globalThis.ethereum;
    if (!eth || typeof eth.request !== "function") return say(text("WalletMissing"), "error");
    const value = usdcUnits(box.querySelector("[name=amount]").value);
    if (value === null || value === 0n) return say(text("AmountInvalid"), "error");
    const d = box.dataset;
    const start = button.dataset.x402Sign === "start";
    button.disabled = true;
    button.classList.add("htmx-request");
    status.hidden = true;
    try {
      const accounts = await eth.request({ method: "eth_requestAccounts" });
      const from = (Array.isArray(accounts) ? accounts : [])
        .find((a) => String(a).toLowerCase() === d.account.toLowerCase());
      if (!from) return say(text("WalletNotPayout"), "error");
      const chainHex = "0x" + Number(d.chainId).toString(16);
      const current = await eth.request({ method: "eth_chainId" });
      if (String(current).toLowerCase() !== chainHex) {
        await eth.request({
          method: "wallet_switchEthereumChain",
          params: [{ chainId: chainHex }],
        });
      }
      // Ten minutes from the later of this clock and the chain's (the vault checks the chain's).
      const block = await eth.request({
        method: "eth_getBlockByNumber",
        params: ["latest", false],
      });
      const chainNow = block && block.timestamp ? Number(BigInt(block.timestamp)) : 0;
      const validBefore = String(Math.max(Math.floor(Date.now() / 1000), chainNow) + 600);
      const nonce = randomBytes32();
      const fields = [
        { name: "account", type: "address" },
        ...(start ? [] : [{ name: "to", type: "address" }]),
        { name: "value", type: "uint256" },
        { name: "validBefore", type: "uint256" },
        { name: "nonce", type: "bytes32" },
      ];
      const primaryType = start ? "InitiateWithdrawal" : "Withdraw";
      const typed = {
        types: {
          EIP712Domain: [
            { name: "name", type: "string" },
            { name: "version", type: "string" },
            { name: "chainId", type: "uint256" },
            { name: "verifyingContract", type: "address" },
          ],
          [primaryType]: fields,
        },
        primaryType,
        domain: {
          name: "GatewayVault",
          version: "1",
          chainId: Number(d.chainId),
          verifyingContract: d.vault,
        },
        message: {
          account: d.account,
          ...(start ? {} : { to: d.account }),
          value: value.toString(),
          validBefore,
          nonce,
        },
      };
      const signature = await eth.request({
        method: "eth_signTypedData_v4",
        params: [from, JSON.stringify(typed)],
      });
      await htmx.ajax("POST", d.submitUrl, {
        target: "#main",
        swap: "innerHTML",
        values: {
          kind: start ? "start" : "withdraw",
          value: value.toString(),
          validBefore,
          nonce,
          signature,
        },
        headers: { "X-CSRF-Token": csrf() },
      });
    } catch (err) {
      say(walletErrorText(err), "error");
    } finally {
      button.disabled = false;
      button.classList.remove("htmx-request");
    }
  }

  // Streams: the accrual ticks in the page between the list's refreshes. Each ACTIVE stream's
  // amount carries its rate and deposit (base units) and the seconds accrued when the server
  // rendered it; the page adds the seconds since, by the contract's formula
  // (min(rate × elapsed, deposit)), and moves the progress bar with it.
  const rendered = new WeakMap();
  const fmt = (units) => {
    const whole = units / 1000000n, frac = units % 1000000n;
    const f = frac.toString().padStart(6, "0").replace(/0+$/, "");
    return f ? `${whole}.${f}` : `${whole}`;
  };
  setInterval(() => {
    for (const el of document.querySelectorAll("[data-accrual]")) {
      if (!rendered.has(el)) rendered.set(el, Date.now());
      const since = Math.floor((Date.now() - rendered.get(el)) / 1000);
      const rate = BigInt(el.dataset.rate), deposit = BigInt(el.dataset.deposit);
      let now = rate * BigInt(Number(el.dataset.elapsed) + since);
      if (now > deposit) now = deposit;
      const pct = Number((now * 10000n) / deposit) / 100;
      el.textContent = `${fmt(now)} of ${fmt(deposit)} USDC (${pct}%)`;
      const bar = el.closest("[data-stream]")?.querySelector("progress");
      if (bar) {
        bar.value = pct;
        bar.setAttribute("aria-label", `${pct}% streamed`);
        // Its text too (read where the bar is not drawn), so no two figures of a card disagree.
        bar.textContent = `${pct}%`;
      }
    }
  }, 1000);
})();

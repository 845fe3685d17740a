// Hosted checkout, "Pay from another chain" with the shopper's own browser wallet (EIP-1193).
// Review: connect, pick the chain the USDC is on, show the fee and the burn (the server quotes).
// Pay: switch the wallet to that chain (adding it when unknown), then either one EIP-3009
// signature the service relays (no gas), or the wallet's own approve + burn, reported by hash.
// Then follow the transfer: burn → attestation → mint; the status block turns to Paid.
(() => {
  "use strict";
  const root = document.getElementById("xchain");
  if (!root) return;
  const cfg = JSON.parse(document.getElementById("xchain-data").textContent);
  const $ = (id) => document.getElementById(id);
  const from = $("xchain-from");
  const fast = $("xchain-fast");
  const reviewButton = $("xchain-review");
  const payButton = $("xchain-pay");
  const fallbackButton = $("xchain-fallback");
  const faucetButton = $("xchain-faucet");
  const message = $("xchain-message");
  const quoteEl = $("xchain-quote");
  const steps = $("xchain-steps");
  const state = $("xchain-state");
  const base = `/checkout/${encodeURIComponent(cfg.reference)}`;
  // A burn sent from this browser but not yet reported (the page was closed or reloaded).
  const pendingKey = `xchain-burn:${cfg.reference}`;
  let eth = null;
  let account = null;
  let quote = null;
  let busy = false;
  let following = false;
  // A burn sent from this page (its USDC gone from the source chain): never offered again.
  let burnSent = false;

  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

  function say(text, kind) {
    message.textContent = text;
    message.dataset.kind = kind || "info";
  }

  async function json(url, init) {
    const res = await fetch(url, { credentials: "same-origin", ...init });
    const body = await res.json().catch(() => ({}));
    return { status: res.status, body };
  }

  const post = (url, body) =>
    json(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });

  const refusal = (r) => [r.body.error, r.body.hint].filter(Boolean).join(" ") || "Refused.";

  function rejected(e) {
    return e && (e.code === 4001 || e.code === "ACTION_REJECTED");
  }

  function reset() {
    quote = null;
    quoteEl.hidden = true;
    payButton.hidden = true;
    fallbackButton.hidden = true;
  }

  async function connect() {
    eth = globalThis.ethereum;
    if (!eth) {
      say("No browser wallet found. Open this page in a wallet app.", "error");
      return false;
    }
    try {
      [account] = await eth.request({ method: "eth_requestAccounts" });
    } catch (e) {
      if (rejected(e)) {
        say("Wallet connection rejected. Nothing was paid.", "error");
        return false;
      }
      throw e;
    }
    return true;
  }

  async function review() {
    reset();
    if (!(await connect())) return;
    say("Getting the fee…");
    const q = new URLSearchParams({
      sourceChain: from.value,
      payer: account,
      transferSpeed: fast.checked ? "fast" : "standard",
    });
    const r = await json(`${base}/bridge-quote?${q}`);
    if (r.status !== 200) return say(refusal(r), "error");
    quote = r.body;
    $("xchain-amount").textContent = `${quote.amount} USDC`;
    $("xchain-fee").textContent = `${quote.fee} USDC`;
    $("xchain-chain").textContent = quote.sourceChain.name;
    $("xchain-burn").textContent = `${quote.burnAmount} USDC`;
    $("xchain-balance").textContent = `${quote.payer.usdcBalance} USDC`;
    $("xchain-mode").textContent = quote.mode === "signature"
      ? "One signature, no gas"
      : walletMode();
    quoteEl.hidden = false;
    if (!quote.payer.sufficient) {
      return say(
        `Insufficient balance: this wallet holds ${quote.payer.usdcBalance} USDC on ${quote.sourceChain.name} and the payment burns ${quote.burnAmount} USDC.`,
        "error",
      );
    }
    payButton.textContent = `Pay ${quote.burnAmount} USDC from ${quote.sourceChain.name}`;
    payButton.hidden = false;
    say("Review the amounts, then pay.");
  }

  const walletMode = () =>
    `Approve and burn from your wallet (needs ${quote.sourceChain.nativeCurrency.symbol} for gas)`;

  async function ensureChain(c) {
    const want = c.chainIdHex.toLowerCase();
    if ((await eth.request({ method: "eth_chainId" })).toLowerCase() === want) return true;
    say(`Switching your wallet to ${c.name}…`);
    try {
      await eth.request({ method: "wallet_switchEthereumChain", params: [{ chainId: want }] });
    } catch (e) {
      if (e && e.code === 4902) {
        await eth.request({
          method: "wallet_addEthereumChain",
          params: [{
            chainId: want,
            chainName: c.name,
            rpcUrls: [new URL(c.rpcUrl, location.href).toString()],
            nativeCurrency: c.nativeCurrency,
            blockExplorerUrls: [c.explorerUrl],
          }],
        });
        await eth.request({ method: "wallet_switchEthereumChain", params: [{ chainId: want }] });
      } else if (!rejected(e)) {
        throw e;
      }
    }
    return (await eth.request({ method: "eth_chainId" })).toLowerCase() === want;
  }

  async function pay() {
    if (!quote) return;
    if (!(await ensureChain(quote.sourceChain))) {
      return say(`Wrong network: switch your wallet to ${quote.sourceChain.name} to pay.`, "error");
    }
    return quote.mode === "signature" && quote.authorization
      ? await paySigned()
      : await payWithTransactions();
  }

  async function signTyped(typed) {
    const payload = {
      ...typed,
      types: {
        EIP712Domain: [
          { name: "name", type: "string" },
          { name: "version", type: "string" },
          { name: "chainId", type: "uint256" },
          { name: "verifyingContract", type: "address" },
        ],
        ...typed.types,
      },
    };
    return await eth.request({
      method: "eth_signTypedData_v4",
      params: [account, JSON.stringify(payload)],
    });
  }

  // One signature: the service's relayer burns the authorized USDC (the shopper needs no gas).
  async function paySigned() {
    say("Sign the payment in your wallet (no gas needed)…");
    let signature;
    try {
      signature = await signTyped(quote.authorization);
    } catch (e) {
      if (rejected(e)) return say("Signature rejected. Nothing was paid.", "error");
      throw e;
    }
    // A smart-contract wallet's signature (ERC-1271) is not a 65-byte one: USDC's EIP-3009
    // (v, r, s) cannot take it, so such a wallet sends the approval and the burn itself.
    if (!/^0x[0-9a-fA-F]{130}$/.test(signature)) return await payWithTransactions();
    say("Submitting your payment…");
    let r;
    try {
      r = await post(`${base}/bridge-relay`, {
        sourceChain: quote.sourceChain.id,
        transferSpeed: quote.transferSpeed,
        maxFee: quote.maxFee,
        authorization: quote.authorization.message,
        signature,
      });
    } catch {
      r = { status: 0, body: {} };
    }
    if (r.status === 200 || r.status === 202) return await follow(r.body.reference);
    if (r.status >= 400 && r.status < 500 && r.status !== 429) return say(refusal(r), "error");
    say(
      `The relay is unavailable right now. Nothing was paid. You can send the approval and the burn from your wallet instead (it needs a little ${quote.sourceChain.nativeCurrency.symbol} on ${quote.sourceChain.name} for gas).`,
      "error",
    );
    payButton.hidden = true;
    fallbackButton.hidden = false;
  }

  async function send(call) {
    return await eth.request({
      method: "eth_sendTransaction",
      params: [{ from: account, to: call.to, data: call.data }],
    });
  }

  // The wallet's own receipt lookups, on the chain it sent to; bounded.
  async function mined(hash) {
    for (let i = 0; i < 300; i++) {
      const r = await eth.request({ method: "eth_getTransactionReceipt", params: [hash] });
      if (r) return r;
      await sleep(1000);
    }
    throw new Error(`transaction ${hash} is not mined yet`);
  }

  // The wallet path: approve (unless already enough) and depositForBurnWithHook, then report.
  async function payWithTransactions() {
    $("xchain-mode").textContent = walletMode();
    if (!(await ensureChain(quote.sourceChain))) {
      return say(`Wrong network: switch your wallet to ${quote.sourceChain.name} to pay.`, "error");
    }
    const two = quote.wallet.needsApproval;
    try {
      if (two) {
        say("Confirm the approval in your wallet (1 of 2)…");
        const approval = await send(quote.wallet.approve);
        say("Waiting for the approval to be mined…");
        const a = await mined(approval);
        if (a.status !== "0x1") return say("The approval reverted. Nothing was paid.", "error");
      }
      say(two ? "Confirm the burn in your wallet (2 of 2)…" : "Confirm the burn in your wallet…");
      const hash = await send(quote.wallet.burn);
      burnSent = true;
      localStorage.setItem(pendingKey, JSON.stringify({ sourceChain: quote.sourceChain.id, hash }));
      say("Burn sent. Waiting for it to be mined…");
      const b = await mined(hash);
      if (b.status !== "0x1") {
        burnSent = false;
        localStorage.removeItem(pendingKey);
        return say("The burn transaction reverted: nothing was burned.", "error");
      }
      await report(quote.sourceChain.id, hash);
    } catch (e) {
      if (rejected(e)) return say("Transaction rejected. Nothing was paid.", "error");
      throw e;
    }
  }

  // Tells the service about the burn; its node may see it a moment after the wallet's did. A
  // request that does not get through is tried again like a 5xx; until the report is taken, the
  // burn stays noted in this browser and nothing offers to pay again (a second burn paid twice).
  async function report(sourceChain, txHash) {
    burnSent = true;
    say("Reporting the burn…");
    for (let i = 0; i < 10; i++) {
      let r;
      try {
        r = await post(`${base}/bridge-burn`, { sourceChain, txHash });
      } catch {
        await sleep(2000);
        continue;
      }
      if (r.status === 200 || r.status === 202) {
        localStorage.removeItem(pendingKey);
        return await follow(r.body.reference);
      }
      if (r.status !== 404 && r.status < 500) {
        localStorage.removeItem(pendingKey);
        return say(refusal(r), "error");
      }
      await sleep(2000);
    }
    for (const el of [reviewButton, payButton, fallbackButton, faucetButton?.parentElement]) {
      if (el) el.hidden = true;
    }
    say(
      `Your burn (${txHash.slice(0, 10)}…) was sent, but the service has not taken it yet. ` +
        "Do not pay again: reload this page to report it again.",
      "error",
    );
  }

  function link(href, label) {
    const a = document.createElement("a");
    a.href = href;
    a.target = "_blank";
    a.rel = "noopener";
    a.textContent = label;
    return a;
  }

  function setStep(name, stepState, text, href) {
    const li = steps.querySelector(`[data-step=${name}]`);
    li.dataset.state = stepState;
    li.textContent = text + " ";
    if (href) li.append(link(href, "transaction"));
  }

  function render(s) {
    steps.hidden = false;
    const label = from.querySelector(`option[value="${s.fromChain}"]`)?.textContent || s.fromChain;
    const burned = s.status !== "pending" && s.burnTxHash;
    setStep(
      "burn",
      burned ? "done" : "active",
      burned ? `Burned ${s.burnAmount} USDC on ${label}.` : `Burning on ${label}…`,
      s.burnExplorerUrl,
    );
    if (s.status === "attested" || s.status === "minted") setStep("attest", "done", "Attested.");
    else if (s.status === "burned") {
      const a = s.attestation;
      const wait = a.attempts > 0 ? ` (asked ${a.attempts}×, ${a.state || "waiting"})` : "";
      setStep("attest", "active", `Waiting for the attestation${wait}…`);
    } else setStep("attest", "todo", "Attestation");
    if (s.status === "minted") {
      setStep(
        "mint",
        "done",
        `Minted ${s.mintedAmount} USDC on Settle Testnet.`,
        s.mintExplorerUrl,
      );
    } else if (s.status === "attested") setStep("mint", "active", "Minting on Settle Testnet…");
    else setStep("mint", "todo", "Mint on Settle Testnet");
    state.dataset.status = s.status;
    state.textContent = s.status === "minted"
      ? "Done: the merchant has been paid."
      : s.status === "failed"
      ? `Failed: ${s.error}`
      : `Status: ${s.status}`;
  }

  async function follow(reference) {
    if (following) return;
    following = true;
    // This payment is under way from the shopper's wallet: nothing else to offer here.
    for (const el of [reviewButton, payButton, fallbackButton, faucetButton?.parentElement]) {
      if (el) el.hidden = true;
    }
    for (const el of document.querySelectorAll("#cross-chain h3.alt, #bridge")) el.hidden = true;
    // Nor the same-chain payment above: both would go through, paying twice.
    const samePanel = document.getElementById("pay-panel");
    if (samePanel) samePanel.hidden = true;
    from.disabled = fast.disabled = true;
    say(`Transfer ${reference} started.`);
    state.dataset.status = "pending";
    for (;;) {
      const r = await json(`/api/cctp/transfer/status?reference=${encodeURIComponent(reference)}`);
      if (r.status === 200) {
        render(r.body);
        if (r.body.status === "minted" || r.body.status === "failed") break;
      }
      await sleep(1000);
    }
    if (state.dataset.status === "failed") {
      reviewButton.hidden = false;
      from.disabled = fast.disabled = false;
      following = false;
    }
    say(state.dataset.status === "minted" ? "Paid from another chain." : "", "info");
  }

  // Development on a local source chain: test USDC (and gas) for the connected wallet.
  async function getTestUsdc() {
    if (!(await connect())) return;
    say("Getting test USDC…");
    const r = await post(`${base}/bridge-faucet`, { sourceChain: from.value, address: account });
    if (r.status !== 200) return say(refusal(r), "error");
    say(`Test USDC received: this wallet now holds ${r.body.usdcBalance} USDC there.`);
    if (quote) await review();
  }

  function guarded(fn) {
    return async () => {
      if (busy) return;
      busy = true;
      for (const b of [reviewButton, payButton, fallbackButton, faucetButton]) {
        if (b) b.disabled = true;
      }
      try {
        await fn();
      } catch (e) {
        say(`Something went wrong: ${(e && e.message) || e}`, "error");
      } finally {
        busy = false;
        // A burn sent and not reported: nothing is offered again (reload reports it).
        for (const b of [reviewButton, payButton, fallbackButton, faucetButton]) {
          if (b) b.disabled = burnSent;
        }
      }
    };
  }

  reviewButton.addEventListener("click", guarded(review));
  payButton.addEventListener("click", guarded(pay));
  fallbackButton.addEventListener("click", guarded(payWithTransactions));
  if (faucetButton) faucetButton.addEventListener("click", guarded(getTestUsdc));
  from.addEventListener("change", reset);
  fast.addEventListener("change", reset);

  // A burn this browser sent and could not report (closed, reloaded): report it now.
  const pending = localStorage.getItem(pendingKey);
  if (pending) {
    try {
      const { sourceChain, hash } = JSON.parse(pending);
      root.closest("details")?.setAttribute("open", "");
      guarded(() => report(sourceChain, hash))();
    } catch {
      localStorage.removeItem(pendingKey);
    }
  }
})();

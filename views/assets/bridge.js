// The bridge form: a service-created wallet (consumer session) burns USDC on a source chain;
// the service attests and mints on Settle Testnet. Progress comes from the status path.
(() => {
  "use strict";
  const root = document.getElementById("bridge");
  if (!root) return;
  const cfg = JSON.parse(document.getElementById("bridge-data").textContent);
  const $ = (id) => document.getElementById(id);
  const from = $("bridge-from");
  const amount = $("bridge-amount");
  const recipient = $("bridge-recipient");
  const submit = $("bridge-submit");
  const faucet = $("bridge-faucet");
  const sessionButton = $("bridge-session");
  const walletEl = $("bridge-wallet");
  const balanceEl = $("bridge-balance");
  const message = $("bridge-message");
  const steps = $("bridge-steps");
  const state = $("bridge-state");
  let account = null;
  let busy = false;

  function say(text, kind) {
    message.textContent = text;
    message.dataset.kind = kind || "info";
  }

  async function json(url, init) {
    const res = await fetch(url, { credentials: "same-origin", ...init });
    const body = await res.json().catch(() => ({}));
    return { status: res.status, body };
  }

  const post = (url, body, headers) =>
    json(url, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    });

  function ready() {
    submit.disabled = !account || busy;
    if (faucet) faucet.disabled = !account || busy;
  }

  async function loadSession() {
    const r = await json("/api/consumer/session");
    const a = r.status === 200 ? r.body.account : null;
    if (a && a.walletType === "MANAGED") {
      account = a;
      walletEl.textContent = a.walletAddress;
      sessionButton.hidden = true;
      if (recipient && !recipient.value) recipient.value = a.walletAddress;
      await refreshBalance();
    } else {
      account = null;
      sessionButton.hidden = false;
      if (a) say("Bridging needs a service-created wallet: start a wallet session.");
    }
    ready();
  }

  // Each chain chosen asks for its balance; only the latest question's answer is shown (an
  // earlier chain's answer arriving after it would name the wrong chain's balance).
  // `data-answers` counts the answers read, shown or not.
  let balanceAsked = 0;
  let balanceAnswers = 0;
  async function refreshBalance() {
    if (!account) return;
    const asked = ++balanceAsked;
    balanceEl.textContent = "…";
    const r = await json(`/bridge/balance?chain=${encodeURIComponent(from.value)}`);
    balanceEl.dataset.answers = String(++balanceAnswers);
    if (asked !== balanceAsked) return;
    balanceEl.textContent = r.status === 200 ? `${r.body.balance} USDC` : "unavailable";
  }

  sessionButton.addEventListener("click", async () => {
    const r = await post("/api/consumer/session", {});
    if (r.status !== 200) return say(r.body.error || "Could not start a session.", "error");
    await loadSession();
  });

  from.addEventListener("change", () => void refreshBalance());

  faucet?.addEventListener("click", async () => {
    busy = true;
    ready();
    say("Minting test USDC…");
    const r = await post("/bridge/dev-faucet", { fromChain: from.value });
    busy = false;
    ready();
    if (r.status !== 200) return say(r.body.error || "The faucet failed.", "error");
    say(`Received ${r.body.amount} test USDC.`);
    await refreshBalance();
  });

  submit.addEventListener("click", async () => {
    if (busy || !account) return;
    busy = true;
    ready();
    const body = {
      fromChain: from.value,
      toChain: "Settle_Testnet",
      amount: cfg.payment ? cfg.payment.amount : amount.value.trim(),
      recipient: cfg.payment ? cfg.payment.payTo : recipient.value.trim(),
    };
    if (cfg.payment) body.paymentReference = cfg.payment.reference;
    say("Starting the transfer…");
    const r = await post("/api/cctp/transfer", body, { "idempotency-key": crypto.randomUUID() });
    if (r.status !== 202) {
      busy = false;
      ready();
      return say([r.body.error, r.body.hint].filter(Boolean).join(" ") || "Refused.", "error");
    }
    say(`Transfer ${r.body.reference} started.`);
    await follow(r.body.reference);
  });

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
      burned ? `Burned ${s.amount} USDC on ${label}.` : `Burning on ${label}…`,
      s.burnExplorerUrl,
    );
    const a = s.attestation;
    if (s.status === "attested" || s.status === "minted") {
      setStep("attest", "done", "Attested.");
    } else if (s.status === "burned") {
      const next = a.nextPollAt ? new Date(a.nextPollAt).toLocaleTimeString() : "now";
      const wait = a.attempts > 0
        ? ` (asked ${a.attempts}×, ${a.state || "waiting"}; next check ${next})`
        : "";
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
      ? "Done: the USDC arrived on Settle Testnet."
      : s.status === "failed"
      ? `Failed: ${s.error}`
      : `Status: ${s.status}`;
  }

  async function follow(reference) {
    for (;;) {
      const r = await json(`/api/cctp/transfer/status?reference=${encodeURIComponent(reference)}`);
      if (r.status === 200) {
        render(r.body);
        if (r.body.status === "minted" || r.body.status === "failed") break;
      }
      await new Promise((res) => setTimeout(res, 1000));
    }
    busy = false;
    ready();
    // A paid checkout is not paid twice from here.
    if (cfg.payment && state.dataset.status === "minted") submit.hidden = true;
    await refreshBalance();
  }

  // On the checkout page the form sits in a closed <details>: ask for the session when it is
  // opened (a visitor who never opens it makes no session request, and sees no 401 logged).
  const fold = root.closest("details");
  if (fold && !fold.open) {
    fold.addEventListener("toggle", function first() {
      if (!fold.open) return;
      fold.removeEventListener("toggle", first);
      void loadSession();
    });
  } else void loadSession();
})();

// Hosted checkout: pay with an injected EIP-1193 wallet. By default gasless: one EIP-3009
// signature, relayed by the service (the wallet sends no transaction). If the relay is
// unavailable, the page offers the fallback: a permit signature and the payer's own transaction.
// Everything else — the typed data, the router call — comes from the server.
(() => {
  "use strict";
  const data = JSON.parse(document.getElementById("checkout-data").textContent);
  const button = document.getElementById("pay-button");
  const panel = document.getElementById("pay-panel");
  const progress = document.getElementById("progress");
  const fallbackButton = document.getElementById("fallback-button");
  const faucetButton = document.getElementById("faucet-button");
  const buttons = [button, fallbackButton, faucetButton].filter(Boolean);
  let fallback = null;
  const base = `/checkout/${encodeURIComponent(data.reference)}`;
  let busy = false;
  // The wallet this page pays from, and whether it sent anything (a relay or a transaction).
  let payingFrom = null;
  let sent = false;

  function say(text, kind) {
    progress.textContent = text;
    progress.dataset.kind = kind || "info";
  }

  function sayWithLink(text, href, label) {
    progress.textContent = text + " ";
    const a = document.createElement("a");
    a.href = href;
    a.target = "_blank";
    a.rel = "noopener";
    a.textContent = label;
    progress.append(a);
    progress.dataset.kind = "info";
  }

  // A network failure is status 0; a body that is not ours (a proxy's error page) is {}.
  async function json(url, init) {
    let res;
    try {
      res = await fetch(url, init);
    } catch {
      return { status: 0, body: {} };
    }
    const body = await res.json().catch(() => ({}));
    return { status: res.status, body };
  }

  // What a refusal from the service means to the shopper: only the service's own 4xx answers
  // are its word; anything else (a proxy's 502, the network gone) is temporary.
  function refusalText(r, fallbackText) {
    if (r.status === 429) {
      return "Too many attempts from this network. Wait a minute and try again. Nothing was paid.";
    }
    if (r.status >= 400 && r.status < 500 && r.body && r.body.error) return r.body.error;
    if (r.status >= 400 && r.status < 500) return fallbackText;
    return "The payment service could not be reached. Nothing was paid. Try again in a moment.";
  }

  function rejected(e) {
    return e && (e.code === 4001 || e.code === "ACTION_REJECTED");
  }

  async function ensureChain(eth) {
    const want = data.chain.chainIdHex.toLowerCase();
    if ((await eth.request({ method: "eth_chainId" })).toLowerCase() === want) return true;
    say(`Switching your wallet to ${data.chain.name}…`);
    try {
      await eth.request({ method: "wallet_switchEthereumChain", params: [{ chainId: want }] });
    } catch (e) {
      if (e && e.code === 4902) {
        try {
          await eth.request({
            method: "wallet_addEthereumChain",
            params: [{
              chainId: want,
              chainName: data.chain.name,
              rpcUrls: [new URL(data.chain.rpcUrl, location.href).toString()],
              nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
              blockExplorerUrls: [data.chain.explorerUrl],
            }],
          });
          await eth.request({
            method: "wallet_switchEthereumChain",
            params: [{ chainId: want }],
          });
        } catch (added) {
          if (!rejected(added)) throw added;
        }
      } else if (!rejected(e)) {
        throw e;
      }
    }
    return (await eth.request({ method: "eth_chainId" })).toLowerCase() === want;
  }

  async function pay() {
    const eth = globalThis.ethereum;
    if (!eth) {
      say(
        "No browser wallet found. Open this page in a wallet app, or scan the QR code with your phone.",
        "error",
      );
      return;
    }
    say("Connecting your wallet…");
    let account;
    try {
      [account] = await eth.request({ method: "eth_requestAccounts" });
    } catch (e) {
      if (rejected(e)) return say("Wallet connection rejected. Nothing was paid.", "error");
      throw e;
    }
    payingFrom = String(account).toLowerCase();
    if (!(await ensureChain(eth))) {
      return say(
        `Wrong network: switch your wallet to ${data.chain.name} (chain ${data.chain.chainId}) to pay. Nothing was paid.`,
        "error",
      );
    }
    say("Checking your balance…");
    const pd = await json(`${base}/pay-data?payer=${account}`);
    if (pd.status !== 200) {
      return say(refusalText(pd, "This payment can no longer be paid."), "error");
    }
    if (!pd.body.payer.sufficient) {
      return say(
        `Insufficient balance: this wallet holds ${pd.body.payer.usdcBalance} USDC and the payment is ${data.amount} USDC.` +
          (data.devFaucet ? " Use “Get test USDC” below." : ""),
        "error",
      );
    }
    return await payGasless(eth, account, pd.body);
  }

  async function signTyped(eth, account, typed) {
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

  function submitted(href) {
    sayWithLink("Payment submitted. Waiting for confirmation…", href, "View transaction");
    button.hidden = true;
    fallbackButton.hidden = true;
    // Being paid here: paying from another chain as well would pay twice.
    const crossChain = document.getElementById("cross-chain");
    if (crossChain) crossChain.hidden = true;
  }

  // The default: one signature, no transaction from the payer; the service relays it.
  async function payGasless(eth, account, pd) {
    say("Sign the payment in your wallet…");
    let signature;
    try {
      signature = await signTyped(eth, account, pd.authorization);
    } catch (e) {
      if (rejected(e)) return say("Signature rejected. Nothing was paid.", "error");
      throw e;
    }
    say("Submitting your payment…");
    sent = true;
    const relay = await json(`${base}/relay`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ authorization: pd.authorization.message, signature }),
    });
    if (relay.status === 200) return submitted(relay.body.explorerUrl);
    if (relay.status === 408) {
      // Broadcast, not yet mined: the status block turns to Paid when it is.
      return say("Payment submitted. Waiting for confirmation…");
    }
    if (relay.status >= 400 && relay.status < 500 && relay.status !== 429) {
      // Refused: nothing was relayed (another wallet's payment, a balance short, …).
      sent = false;
      return say(refusalText(relay, "The payment could not be submitted."), "error");
    }
    sent = false;
    // The relay is unavailable: offer the payer-sent transaction (needs native gas).
    say(
      "The gasless relay is unavailable right now. Nothing was paid. You can pay with a transaction from your wallet instead (it needs a little native gas).",
      "error",
    );
    fallback = { eth, account, pd };
    fallbackButton.hidden = false;
  }

  // The fallback: an EIP-2612 permit and the router transaction from the payer's wallet.
  async function payWithTransaction({ eth, account, pd }) {
    if (!(await ensureChain(eth))) {
      return say(`Wrong network: switch your wallet to ${data.chain.name} to pay.`, "error");
    }
    const typed = pd.permit;
    say("Sign the payment permit in your wallet…");
    let signature;
    try {
      signature = await signTyped(eth, account, typed);
    } catch (e) {
      if (rejected(e)) return say("Signature rejected. Nothing was paid.", "error");
      throw e;
    }
    const cd = await json(`${base}/calldata`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ payer: account, signature, deadline: String(typed.message.deadline) }),
    });
    if (cd.status !== 200) {
      return say(refusalText(cd, "The payment could not be prepared."), "error");
    }
    say("Confirm the transaction in your wallet…");
    let hash;
    try {
      sent = true;
      hash = await eth.request({
        method: "eth_sendTransaction",
        params: [{ from: account, to: cd.body.to, data: cd.body.data }],
      });
    } catch (e) {
      sent = false;
      if (rejected(e)) return say("Transaction rejected. Nothing was paid.", "error");
      throw e;
    }
    await json(`${base}/submitted`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ txHash: hash }),
    });
    submitted(`${data.chain.explorerUrl}/tx/${hash}`);
  }

  // Development on a local chain only: test USDC (and gas) for the connected wallet.
  async function getTestUsdc() {
    const eth = globalThis.ethereum;
    if (!eth) return say("No browser wallet found.", "error");
    let account;
    try {
      [account] = await eth.request({ method: "eth_requestAccounts" });
    } catch (e) {
      if (rejected(e)) return say("Wallet connection rejected.", "error");
      throw e;
    }
    say("Getting test USDC…");
    const r = await json(`${base}/dev-faucet`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ address: account }),
    });
    if (r.status !== 200) return say(refusalText(r, "No test USDC right now."), "error");
    say(`Test USDC received: this wallet now holds ${r.body.usdcBalance} USDC.`);
  }

  function guarded(fn) {
    return async () => {
      if (busy) return;
      busy = true;
      for (const b of buttons) b.disabled = true;
      try {
        await fn();
      } catch (e) {
        // The wallet's own words, with what it means for the shopper's money.
        const what = String((e && e.message) || e).slice(0, 300);
        say(
          sent
            ? `Something went wrong: ${what}. Your payment may still go through: this page shows it when it does.`
            : `Something went wrong: ${what}. Nothing was paid.`,
          "error",
        );
      } finally {
        busy = false;
        for (const b of buttons) b.disabled = false;
      }
    };
  }

  // The buttons are hidden until this script runs: without it they would do nothing.
  button.hidden = false;
  if (faucetButton) faucetButton.closest(".dev-faucet").hidden = false;
  button.addEventListener("click", guarded(pay));
  fallbackButton.addEventListener(
    "click",
    guarded(() => fallback ? payWithTransaction(fallback) : pay()),
  );
  if (faucetButton) faucetButton.addEventListener("click", guarded(getTestUsdc));

  // The status block is replaced by htmx while polling; hide the pay panel once it is final.
  document.body.addEventListener("htmx:afterSwap", () => {
    const status = document.getElementById("status");
    if (status && status.dataset.payable !== "true") {
      const qr = document.getElementById("qr");
      if (qr) qr.hidden = true;
      const payer = (status.dataset.payer || "").toLowerCase();
      if (status.dataset.status === "SUCCESS" && payingFrom && payer && payer !== payingFrom) {
        // This tab's wallet lost a race with another wallet's payment: say so, not "Paid".
        for (const b of buttons) b.hidden = true;
        say(
          `This payment was paid from another wallet (${payer}). Nothing was taken from yours` +
            (sent
              ? "; a transaction of yours that did not go through spent only its network fee."
              : "."),
          "error",
        );
      } else {
        panel.hidden = true;
      }
      // Nothing is left to pay from another chain either, unless a transfer from there is the
      // one that paid (its progress stays in view).
      const crossChain = document.getElementById("cross-chain");
      const bridged = document.getElementById("bridge-state")?.dataset.status ||
        document.getElementById("xchain-state")?.dataset.status;
      if (crossChain && !bridged) crossChain.hidden = true;
    }
    tick();
  });

  // A local countdown between polls.
  let left = null;
  function tick() {
    const el = document.getElementById("time-left");
    if (!el) return;
    left = Number(el.dataset.seconds);
  }
  tick();
  setInterval(() => {
    const el = document.getElementById("time-left");
    if (!el || left === null) return;
    left = Math.max(0, left - 1);
    if (left <= 0 && !busy && !sent) {
      // Expired here: the sweep marks it within a minute; nothing can be paid meanwhile.
      panel.hidden = true;
      const qr = document.getElementById("qr");
      if (qr) qr.hidden = true;
    }
    const h = Math.floor(left / 3600), m = Math.floor((left % 3600) / 60), s = left % 60;
    el.textContent = left <= 0
      ? "expired"
      : h > 0
      ? `${h}h ${String(m).padStart(2, "0")}m`
      : `${m}:${String(s).padStart(2, "0")}`;
  }, 1000);
})();

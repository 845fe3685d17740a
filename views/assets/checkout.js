// Hosted checkout: pay with an injected EIP-1193 wallet (one permit signature, one transaction).
// Everything else — the order, the permit's typed data, the router call — comes from the server.
(() => {
  "use strict";
  const data = JSON.parse(document.getElementById("checkout-data").textContent);
  const button = document.getElementById("pay-button");
  const panel = document.getElementById("pay-panel");
  const progress = document.getElementById("progress");
  const base = `/checkout/${encodeURIComponent(data.reference)}`;
  let busy = false;

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

  async function json(url, init) {
    const res = await fetch(url, init);
    const body = await res.json().catch(() => ({}));
    return { status: res.status, body };
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
        await eth.request({ method: "wallet_switchEthereumChain", params: [{ chainId: want }] });
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
    if (!(await ensureChain(eth))) {
      return say(
        `Wrong network: switch your wallet to ${data.chain.name} (chain ${data.chain.chainId}) to pay.`,
        "error",
      );
    }
    say("Checking your balance…");
    const pd = await json(`${base}/pay-data?payer=${account}`);
    if (pd.status !== 200) {
      return say(pd.body.error || "This payment can no longer be paid.", "error");
    }
    if (!pd.body.payer.sufficient) {
      return say(
        `Insufficient balance: this wallet holds ${pd.body.payer.usdcBalance} USDC and the payment is ${data.amount} USDC.`,
        "error",
      );
    }
    const typed = pd.body.permit;
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
    say("Sign the payment permit in your wallet…");
    let signature;
    try {
      signature = await eth.request({
        method: "eth_signTypedData_v4",
        params: [account, JSON.stringify(payload)],
      });
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
      return say(cd.body.error || "The payment could not be prepared.", "error");
    }
    say("Confirm the transaction in your wallet…");
    let hash;
    try {
      hash = await eth.request({
        method: "eth_sendTransaction",
        params: [{ from: account, to: cd.body.to, data: cd.body.data }],
      });
    } catch (e) {
      if (rejected(e)) return say("Transaction rejected. Nothing was paid.", "error");
      throw e;
    }
    await json(`${base}/submitted`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ txHash: hash }),
    });
    sayWithLink(
      "Payment sent. Waiting for confirmation…",
      `${data.chain.explorerUrl}/tx/${hash}`,
      "View transaction",
    );
    button.hidden = true;
  }

  button.addEventListener("click", async () => {
    if (busy) return;
    busy = true;
    button.disabled = true;
    try {
      await pay();
    } catch (e) {
      say(`Something went wrong: ${(e && e.message) || e}`, "error");
    } finally {
      busy = false;
      button.disabled = false;
    }
  });

  // The status block is replaced by htmx while polling; hide the pay panel once it is final.
  document.body.addEventListener("htmx:afterSwap", () => {
    const status = document.getElementById("status");
    if (status && status.dataset.payable !== "true") panel.hidden = true;
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
    const h = Math.floor(left / 3600), m = Math.floor((left % 3600) / 60), s = left % 60;
    el.textContent = left <= 0
      ? "expired"
      : h > 0
      ? `${h}h ${String(m).padStart(2, "0")}m`
      : `${m}:${String(s).padStart(2, "0")}`;
  }, 1000);
})();
